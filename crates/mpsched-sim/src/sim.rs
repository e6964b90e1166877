//! The discrete-event simulator: one server and one client host, one path per subflow, each
//! path a link in each direction. Data flows server -> client (a download, as in the papers).
//!
//! Time zero is the client's SYN. The server starts sending when the request reaches it, one
//! handshake RTT plus the uplink delay later; further subflows join after their own
//! MP_JOIN handshake, started once the first subflow is up (RFC 8684 3.2).

use crate::config::{Config, Protocol, Workload};
use crate::event::{ComponentId, EventList};
use crate::summary::{self, Summary};
use crate::trace_out::{Sink, Tracer};
use mpsched_core::conn::sender::SubflowConfig;
use mpsched_core::conn::{Receiver, ReceiverConfig, Sender, SenderConfig};
use mpsched_core::link::Link;
use mpsched_core::rng::Rng;
use mpsched_core::sched::{self, SchedSample};
use mpsched_core::trace::{AckTrace, DeliveryTrace, SentTrace};
use mpsched_core::{Bytes, Dur, Rate, Time};

const SERVER: ComponentId = 0;
const CLIENT: ComponentId = 1;
const SCHEDULE: ComponentId = 2;
const SAMPLER: ComponentId = 3;
const FIRST_LINK: ComponentId = 4;
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
}

pub struct Simulation {
    cfg: Config,
    server: Sender,
    client: Receiver,
    /// Index 2p: path p downlink (data); 2p + 1: uplink (ACKs).
    links: Vec<Link>,
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
        let mptcp = cfg.protocol == Protocol::Mptcp;
        let n_sub = if mptcp { cfg.paths.len() } else { 1 };

        let links: Vec<Link> = cfg
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

        // Handshake timing from the idle paths.
        let hs_rtt = |p: usize| {
            let pc = &cfg.paths[p];
            Dur(pc.down.delay_ns + pc.up.delay_ns)
                + Rate::bps(pc.down.rate_bps).tx_time(SYN_BYTES)
                + Rate::bps(pc.up.rate_bps).tx_time(SYN_BYTES)
        };
        let up_delay = |p: usize| {
            Dur(cfg.paths[p].up.delay_ns) + Rate::bps(cfg.paths[p].up.rate_bps).tx_time(SYN_BYTES)
        };
        let rtt0 = hs_rtt(0);
        let start = Time::ZERO + rtt0 + up_delay(0);
        let subflows = (0..n_sub)
            .map(|p| SubflowConfig {
                established_at: if p == 0 {
                    start
                } else {
                    Time::ZERO + rtt0 + hs_rtt(p) + up_delay(p)
                },
                handshake_rtt: hs_rtt(p),
                backup: false,
            })
            .collect();

        let total = match cfg.workload {
            Workload::Bulk => None,
            Workload::File { size_bytes } => Some(Bytes(size_bytes)),
        };
        let sched = if let Some(s) = external.filter(|_| mptcp) {
            s
        } else if mptcp {
            sched::build(&cfg.scheduler, &cfg.sched_params()?)?
        } else {
            sched::build("minrtt", &sched::SchedParams::new())?
        };
        let client = Receiver::new(ReceiverConfig {
            mptcp,
            rcvbuf: Bytes(cfg.rcvbuf_bytes),
            rcvbuf_initial: Bytes(cfg.rcvbuf_initial_bytes),
            rcvbuf_autotune: cfg.rcvbuf_autotune,
            window_ratio: cfg.window_ratio_256(),
            subflows: n_sub,
            stack: cfg.stack.stack(),
            total,
            trace,
        });
        let server = Sender::new(
            SenderConfig {
                mptcp,
                sndbuf: Bytes(cfg.sndbuf_bytes),
                sndbuf_autotune: cfg.sndbuf_autotune,
                stack: cfg.stack.stack(),
                initial_rwnd: Bytes(client.initial_window()),
                total,
                subflows,
                trace,
            },
            cfg.cc().build(),
            sched,
            start,
        );

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
                })
            })
            .collect();
        // Stable: changes at the same instant apply in file order.
        changes.sort_by_key(|c| c.at);

        let n_links = links.len();
        let mut events = EventList::new(FIRST_LINK as usize + n_links);
        events.schedule(SERVER, start);
        if let Some(c) = changes.first() {
            events.schedule(SCHEDULE, c.at);
        }
        Ok(Simulation {
            end: Time(cfg.duration_ns),
            cfg,
            server,
            client,
            links,
            changes,
            next_change: 0,
            events,
            now: Time::ZERO,
            processed: 0,
            sample_interval: None,
            sampled: false,
        })
    }

    /// Runs to the end of the scenario (its duration, or the file's last byte delivered),
    /// keeping any traces in memory.
    pub fn run(mut self) -> RunOutput {
        let wall = std::time::Instant::now();
        self.run_loop(&mut |_: &mut Simulation| {});
        let summary = self.summary(wall.elapsed().as_secs_f64());
        self.server.finish_trace();
        let scheduler = self.server.take_sched_samples();
        let traces = self.server.ack_trace.take().map(|acks| Traces {
            acks,
            scheduler,
            sent: self.server.sent_trace.take().unwrap_or_default(),
            delivery: self.client.trace.take().unwrap_or_default(),
        });
        RunOutput { summary, traces }
    }

    /// Runs to the end, sampling every subflow and the connection every `sample_interval`
    /// and handing the traces to `sink` in chunks of about `chunk_rows` rows.
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
            if sim.sampled {
                sim.sampled = false;
                tracer.sample(sim.now, &sim.server, &sim.client, &sim.links);
            }
            ticks += 1;
            if ticks >= 1024 {
                ticks = 0;
                tracer.flush(&mut sim.server, &mut sim.client, false, sink);
            }
        });
        self.server.finish_trace();
        tracer.flush(&mut self.server, &mut self.client, true, sink);
        self.summary(wall.elapsed().as_secs_f64())
    }

    fn run_loop(&mut self, after_event: &mut dyn FnMut(&mut Simulation)) {
        let mut started = false;
        while let Some((t, c)) = self.events.pop() {
            if t > self.end {
                break;
            }
            self.now = t;
            // The sampler observes the model; it is not part of it.
            self.processed += u64::from(c != SAMPLER);
            match c {
                SERVER => {
                    if !started {
                        started = true;
                        self.server.start(t);
                    }
                    self.server.handle_timeout(t);
                    self.flush_server();
                }
                CLIENT => {
                    self.client.handle_timeout(t);
                    self.flush_client();
                }
                SCHEDULE => self.apply_changes(),
                SAMPLER => {
                    self.sampled = true;
                    if let Some(d) = self.sample_interval {
                        self.events.schedule(SAMPLER, t + d);
                    }
                }
                link => self.on_link(link),
            }
            after_event(self);
            if self.client.complete_at().is_some() {
                break;
            }
        }
    }

    fn summary(&self, wall_s: f64) -> Summary {
        let end = self.client.complete_at().unwrap_or(self.end);
        summary::build(
            &self.cfg,
            &self.server,
            &self.client,
            &self.links,
            end,
            self.processed,
            wall_s,
        )
    }

    fn on_link(&mut self, c: ComponentId) {
        let l = (c - FIRST_LINK) as usize;
        let now = self.now;
        while let Some(pkt) = self.links[l].poll_deliver(now) {
            if l.is_multiple_of(2) {
                self.client.handle_data(now, &pkt);
                self.flush_client();
            } else {
                self.server.handle_ack(now, &pkt);
                self.flush_server();
            }
        }
        self.rearm_link(l);
    }

    fn rearm_link(&mut self, l: usize) {
        if let Some(t) = self.links[l].poll_at() {
            self.events.schedule(FIRST_LINK + l as ComponentId, t);
        }
    }

    fn flush_server(&mut self) {
        let now = self.now;
        while let Some(pkt) = self.server.poll_transmit() {
            let l = down(pkt.subflow as usize);
            let _ = self.links[l].enqueue(now, pkt);
            self.rearm_link(l);
        }
        if let Some(t) = self.server.poll_timeout() {
            self.events.schedule(SERVER, t.max(now));
        }
    }

    fn flush_client(&mut self) {
        let now = self.now;
        while let Some(pkt) = self.client.poll_transmit() {
            let l = up(pkt.subflow as usize);
            let _ = self.links[l].enqueue(now, pkt);
            self.rearm_link(l);
        }
        if let Some(t) = self.client.poll_timeout() {
            self.events.schedule(CLIENT, t.max(now));
        }
    }

    fn apply_changes(&mut self) {
        let now = self.now;
        while let Some(c) = self.changes.get(self.next_change).filter(|c| c.at <= now) {
            let (p, rate, dd, du) = (c.path, c.rate, c.delay_down, c.delay_up);
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
            self.next_change += 1;
            self.rearm_link(down(p));
            self.rearm_link(up(p));
        }
        if let Some(c) = self.changes.get(self.next_change) {
            self.events.schedule(SCHEDULE, c.at);
        }
    }
}

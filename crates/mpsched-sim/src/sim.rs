//! The discrete-event simulator: a server and a client host joined by paths, each path its own
//! link in each direction and, beyond it, the shared links it names (`Config::routes`). Data
//! flows server -> client (a download, as in the papers).
//!
//! The main connection has one subflow per path it uses. Competing flows (`Config::flows`) are
//! further connections between the same hosts over the same paths: their packets share the
//! links' queues, tagged with the connection they belong to so that each link delivers them
//! to the right socket.
//!
//! Time zero is the main connection's SYN; a competing flow's SYN leaves at its start. The
//! handshakes are packets in the links (`handshake.rs`): a server starts sending when the
//! first subflow's third ACK brings the request, and the client starts the other subflows'
//! MP_JOINs once the first SYN-ACK is in (RFC 8684 3.2). A path's address may go away and come
//! back (`set_present`): its subflows close, and join again as new incarnations.

use crate::app::App;
use crate::capture::{Capture, Vantage};
use crate::component::{Component, Components};
use crate::config::{Config, JoinName, Protocol, Workload};
use crate::conn::{Conn, ConnSpec, Item, Net, SimLink, Tagged};
use crate::error::SimError;
use crate::event::EventList;
use crate::handshake::{Event as HsEvent, HsPacket};
use crate::summary::{self, Summary};
use crate::trace_out::{Sink, Tracer};
use mpsched_core::link::{Drop, Link};
use mpsched_core::packet::Packet;
use mpsched_core::rng::Rng;
use mpsched_core::sched::{self, SchedSample};
use mpsched_core::trace::{AckTrace, DeliveryTrace, SentTrace};
use mpsched_core::units::wire;
use mpsched_core::{Bytes, Dur, Rate, Time};
use mpsched_scenario::plan::{down_link as down, up_link as up, PathChange, Route};

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
    /// The main connection's subflows' sender counters, those the summary leaves out too
    /// (D-SACKs, undos).
    pub subflow_tx: Vec<mpsched_core::subflow::tx::SubflowTxStats>,
}

pub struct Simulation {
    cfg: Config,
    /// The main connection first, then the competing flows.
    conns: Vec<Conn>,
    /// Index 2p: path p's own down link (data); 2p + 1: its up link (ACKs); then the shared
    /// links, down and up (`Config::link_plans`).
    links: Vec<SimLink>,
    /// Each path's links, in the order its packets cross them.
    routes: Vec<Route>,
    /// Some path crosses a shared link (else every route is the path's own link).
    shared_links: bool,
    /// Paths whose client address is gone (`state = "gone"`): no subflow opens there.
    absent: Vec<bool>,
    /// Files not yet delivered; the run ends when none is left, if the main connection
    /// transfers a file.
    files_pending: usize,
    app: Option<App>,
    changes: Vec<PathChange>,
    next_change: usize,
    events: EventList,
    ids: Components,
    end: Time,
    now: Time,
    processed: u64,
    sample_interval: Option<Dur>,
    sampled: bool,
    /// The watcher stopped the run at `now`.
    interrupted: bool,
    /// A packet capture (`--pcap`), when asked for.
    capture: Option<Capture>,
}

/// Called every `WATCH_EVERY` events with the simulated time and the events so far; returns
/// whether to go on (a caller's Ctrl-C, a progress bar, a limit on the traces' size).
pub type Watch<'a> = dyn FnMut(Time, u64) -> bool + 'a;

/// Often enough to stop within a few milliseconds of wall time, rarely enough to cost nothing.
pub const WATCH_EVERY: u64 = 16_384;

impl Simulation {
    pub fn new(cfg: Config, trace: bool) -> Result<Simulation, SimError> {
        cfg.validate()?;
        Simulation::build(cfg, trace, None)
    }

    /// A simulation whose MPTCP scheduler is `sched` rather than one named in the scenario
    /// (a scheduler written in Python, say).
    pub fn with_scheduler(
        cfg: Config,
        trace: bool,
        sched: Box<dyn sched::Scheduler>,
    ) -> Result<Simulation, SimError> {
        cfg.validate_model()?;
        Simulation::build(cfg, trace, Some(sched))
    }

    fn build(
        cfg: Config,
        trace: bool,
        external: Option<Box<dyn sched::Scheduler>>,
    ) -> Result<Simulation, SimError> {
        let links: Vec<SimLink> = cfg
            .link_plans()
            .iter()
            .map(|plan| Link::new(&plan.link, Rng::new(cfg.seed, plan.stream)))
            .collect();
        let routes = cfg.routes();
        let shared_links = cfg.has_shared_links();
        let n_paths = cfg.paths.len();
        let net = Net {
            links: &links,
            routes: &routes,
        };

        let mptcp = cfg.protocol == Protocol::Mptcp;
        let main_sched = if let Some(s) = external.filter(|_| mptcp) {
            s
        } else if mptcp {
            sched::build(&cfg.scheduler, &cfg.sched_params()?)
                .map_err(SimError::scheduler("connection"))?
        } else {
            sched::build("minrtt", &sched::SchedParams::new())
                .map_err(SimError::scheduler("connection"))?
        };
        let main_paths: Vec<usize> = (0..if mptcp { cfg.main_path_count() } else { 1 }).collect();
        let main_total = match cfg.workload {
            Workload::Bulk | Workload::Rate { .. } => None,
            Workload::File { size_bytes } => Some(Bytes(size_bytes)),
        };
        let mut conns = vec![Conn::open(
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
            net,
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
                // A block on an idle path: every link's delay, and its serialization at the
                // slowest link of the route.
                let block_wire = block_segs * u64::from(wire::MTU);
                let ideal = conns[0]
                    .paths
                    .iter()
                    .map(|&p| {
                        let route = routes[p].links(true).iter().map(|&l| &links[l]);
                        let delay = route.clone().fold(Dur::ZERO, |a, l| a + l.delay());
                        let tx = route.map(|l| l.rate().tx_time(block_wire)).max();
                        delay + tx.unwrap_or(Dur::ZERO)
                    })
                    .min()
                    .unwrap_or(Dur::ZERO);
                Some(App::new(
                    Rate::bps(rate_bps).tx_time(block_bytes),
                    block_segs,
                    mss,
                    conns[0].start,
                    conns[0].start + Dur(warmup_ns),
                    ideal,
                ))
            }
            _ => None,
        };
        for k in 0..cfg.flows.len() {
            let mut c = Conn::flow(&cfg, k, net)?;
            c.syn_pending = true;
            conns.push(c);
        }
        let files_pending = if conns[0].file {
            conns.iter().filter(|c| c.file).count()
        } else {
            usize::MAX
        };

        let changes = cfg.path_changes();

        let ids = Components::new(links.len());
        let mut events = EventList::new(ids.count(conns.len()));
        // Each connection begins with its client's first SYN.
        for (k, c) in conns.iter().enumerate() {
            events.schedule(ids.id(Component::Handshake(k)), c.syn_at);
        }
        if let Some(c) = changes.first() {
            events.schedule(ids.id(Component::Schedule), at(c));
        }
        if let Some(a) = &app {
            events.schedule(ids.id(Component::App), a.start());
        }
        Ok(Simulation {
            end: Time(cfg.duration_ns),
            cfg,
            conns,
            links,
            routes,
            shared_links,
            absent: vec![false; n_paths],
            files_pending,
            app,
            changes,
            next_change: 0,
            events,
            ids,
            now: Time::ZERO,
            processed: 0,
            sample_interval: None,
            sampled: false,
            interrupted: false,
            capture: None,
        })
    }

    /// Writes every packet of the run, as seen at `vantage`, to `out` as pcapng. A write
    /// that fails (a full disk, a limit `out` enforces) stops the run; `out` knows why.
    pub fn capture(
        &mut self,
        vantage: Vantage,
        out: Box<dyn std::io::Write>,
    ) -> std::io::Result<()> {
        let names: Vec<String> = self.cfg.paths.iter().map(|p| p.name.clone()).collect();
        let mut capture = Capture::new(out, vantage, &names, self.cfg.seed)?;
        for (k, conn) in self.conns.iter().enumerate() {
            if !conn.syn_pending {
                capture.open(k, conn);
            }
        }
        self.capture = Some(capture);
        Ok(())
    }

    /// The run is over: the capture writes what is due and flushes.
    fn finish_capture(&mut self) {
        if let Some(c) = self.capture.as_mut() {
            c.finish(self.now);
        }
    }

    /// Runs to the end of the scenario (its duration, or the file's last byte delivered),
    /// keeping any traces of the main connection in memory.
    pub fn run(self) -> RunOutput {
        self.run_watched(&mut |_, _| true)
    }

    /// `run`, with `watch` called every `WATCH_EVERY` events: when it returns false the run
    /// stops there, and the summary is of what happened so far (`interrupted_at_s`).
    pub fn run_watched(mut self, watch: &mut Watch) -> RunOutput {
        let wall = std::time::Instant::now();
        self.run_loop(&mut |_: &mut Simulation| {}, watch);
        self.finish_capture();
        let summary = self.summary(wall.elapsed().as_secs_f64());
        let main = &mut self.conns[0];
        let subflow_tx = main.server.subflows().iter().map(|sf| sf.stats).collect();
        main.server.finish_trace();
        let scheduler = main.server.take_sched_samples();
        let traces = main.server.ack_trace.take().map(|acks| Traces {
            acks,
            scheduler,
            sent: main.server.sent_trace.take().unwrap_or_default(),
            delivery: main.client.trace.take().unwrap_or_default(),
        });
        RunOutput {
            summary,
            traces,
            subflow_tx,
        }
    }

    /// Runs to the end, sampling every subflow and the main connection every
    /// `sample_interval` and handing the traces to `sink` in chunks of about `chunk_rows` rows.
    pub fn run_streaming(
        self,
        sample_interval: Dur,
        chunk_rows: usize,
        sink: &mut Sink,
    ) -> Summary {
        self.run_streaming_watched(sample_interval, chunk_rows, sink, &mut |_, _| true)
    }

    /// `run_streaming`, watched as `run_watched` is; the traces up to the stop are flushed.
    pub fn run_streaming_watched(
        mut self,
        sample_interval: Dur,
        chunk_rows: usize,
        sink: &mut Sink,
        watch: &mut Watch,
    ) -> Summary {
        let wall = std::time::Instant::now();
        let mut tracer = Tracer::new(chunk_rows);
        self.sample_interval = Some(sample_interval.max(Dur(1)));
        self.schedule(Component::Sampler, Time::ZERO);
        let mut ticks = 0u32;
        self.run_loop(
            &mut |sim: &mut Simulation| {
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
            },
            watch,
        );
        self.finish_capture();
        let main = &mut self.conns[0];
        main.server.finish_trace();
        tracer.flush(&mut main.server, &mut main.client, true, sink);
        self.summary(wall.elapsed().as_secs_f64())
    }

    fn schedule(&mut self, c: Component, t: Time) {
        self.events.schedule(self.ids.id(c), t);
    }

    fn run_loop(&mut self, after_event: &mut dyn FnMut(&mut Simulation), watch: &mut Watch) {
        let mut until_watch = WATCH_EVERY;
        while let Some((t, id)) = self.events.pop() {
            if t > self.end {
                break;
            }
            self.now = t;
            let c = self.ids.component(id);
            // The sampler observes the model; it is not part of it.
            self.processed += u64::from(c != Component::Sampler);
            match c {
                Component::Schedule => self.apply_changes(),
                Component::App => self.app_write(),
                Component::Sampler => {
                    self.sampled = true;
                    if let Some(d) = self.sample_interval {
                        self.schedule(Component::Sampler, t + d);
                    }
                }
                Component::Handshake(k) => self.on_handshake_timer(k),
                // Before the request arrives (the first subflow's third ACK) the server has
                // nothing to send.
                Component::Server(k) if self.conns[k].started() => {
                    self.conns[k].server.handle_timeout(t);
                    self.flush_server(k);
                }
                Component::Server(_) => {}
                Component::Client(k) => {
                    self.conns[k].client.handle_timeout(t);
                    self.flush_client(k);
                }
                Component::Link(l) => self.on_link(l),
            }
            after_event(self);
            if self.files_pending == 0 {
                break;
            }
            until_watch -= 1;
            if until_watch == 0 {
                until_watch = WATCH_EVERY;
                let capture_failed = self.capture.as_ref().is_some_and(Capture::failed);
                if capture_failed || !watch(self.now, self.processed) {
                    self.interrupted = true;
                    break;
                }
            }
        }
    }

    /// The application writes its next block.
    fn app_write(&mut self) {
        let now = self.now;
        let Some(app) = self.app.as_mut() else {
            return;
        };
        let (segs, next) = app.write();
        let main = &mut self.conns[0];
        main.server.app_write(now, segs);
        self.schedule(Component::App, next);
        self.flush_server(0);
    }

    /// Connection `k`'s handshake timer: its first SYN leaves, or a SYN or SYN-ACK goes again.
    fn on_handshake_timer(&mut self, k: usize) {
        let now = self.now;
        if self.conns[k].syn_pending {
            self.conns[k].syn_pending = false;
            if let Some(capture) = self.capture.as_mut() {
                capture.open(k, &self.conns[k]);
            }
        }
        let conn = &mut self.conns[k];
        let mut out = Vec::new();
        if !conn.hs.started(0) {
            out.push(conn.hs.connect(now, 0));
            conn.client.subflow_opened(0);
        }
        conn.hs.on_timeout(now, &mut out);
        for p in out {
            self.send_hs(k, p);
        }
        self.rearm_handshake(k);
    }

    fn rearm_handshake(&mut self, k: usize) {
        if let Some(t) = self.conns[k].hs.poll_timeout() {
            self.schedule(Component::Handshake(k), t.max(self.now));
        }
    }

    /// A handshake packet of connection `k` reached its host.
    fn on_hs_packet(&mut self, k: usize, p: HsPacket) {
        let now = self.now;
        let conn = &mut self.conns[k];
        let (answer, event) = conn.hs.on_packet(now, &p);
        if let Some(a) = answer {
            self.send_hs(k, a);
        }
        if let Some(HsEvent::ClientEstablished { subflow, rtt }) = event {
            // Its socket's receive buffer starts measuring (tcp_init_transfer).
            self.conns[k].client.subflow_established(subflow, rtt);
        }
        match event {
            // The first subflow is up: the client opens the others (MP_JOIN), on the paths
            // whose address it has.
            // The first subflow is up; the client opens the others (MP_JOIN) once the
            // connection is fully established (`mptcp_pm_fully_established`): when the
            // server's first data arrives, not at the SYN-ACK.
            Some(HsEvent::ClientEstablished { subflow: 0, .. }) if self.conns[k].mptcp => {
                match self.cfg.join {
                    JoinName::FirstData => self.conns[k].joins_pending = true,
                    JoinName::SynAck => self.open_joins(k),
                }
            }
            Some(HsEvent::ServerEstablished { subflow, rtt }) => {
                let conn = &mut self.conns[k];
                conn.server.establish(now, subflow, rtt);
                if subflow == 0 {
                    // The third ACK brings the request along.
                    conn.start_once(now);
                }
                if conn.started() {
                    conn.server.handle_timeout(now);
                }
                self.flush_server(k);
            }
            _ => {}
        }
        self.rearm_handshake(k);
    }

    /// Puts a handshake packet of connection `k` on its subflow's path.
    fn send_hs(&mut self, k: usize, p: HsPacket) {
        let path = self.conns[k].paths[p.subflow as usize];
        let data = !p.from_client();
        let l = self.routes[path].links(data)[0];
        if let Some(c) = self.capture.as_mut() {
            c.hs_sent(self.now, k, &p);
        }
        self.forward(l, Tagged::new(k, 0, Item::Hs(p)), data);
    }

    fn summary(&self, wall_s: f64) -> Summary {
        // The run stops when the last file is in, at its duration, or when interrupted.
        let end = if self.interrupted { self.now } else { self.end };
        let main_end = self.conns[0].client.complete_at().unwrap_or(end);
        let run_end = if self.files_pending == 0 {
            self.now
        } else {
            end
        };
        summary::build(
            &self.cfg,
            &self.conns,
            self.app.as_ref(),
            summary::Ends {
                main: main_end,
                run: run_end,
                interrupted: self.interrupted.then_some(self.now),
            },
            self.processed,
            wall_s,
        )
    }

    fn on_link(&mut self, l: usize) {
        let now = self.now;
        let data = l.is_multiple_of(2);
        while let Some(t) = self.links[l].peek_deliver(now) {
            // On a path's own link (the end of its route) a segment is read where it lies in
            // the link, which then drops it: no copy of it is made. Shared links, handshake
            // packets and a capture take the general way below.
            let plain = !self.shared_links && self.capture.is_none();
            if let (Item::Seg(pkt), true) = (&t.item, plain) {
                let k = t.conn as usize;
                if data {
                    self.conns[k].client.handle_data(now, pkt);
                    self.links[l].pop_delivered();
                    self.after_data(k);
                } else {
                    self.conns[k].server.handle_ack(now, pkt);
                    self.links[l].pop_delivered();
                    self.flush_server(k);
                }
                continue;
            }
            let Tagged {
                conn: k, hop, item, ..
            } = self.links[l].pop_delivered();
            let k = k as usize;
            if self.shared_links {
                let route = self.routes[self.conns[k].paths[item.subflow()]].links(data);
                if let Some(&next) = route.get(hop as usize + 1) {
                    self.forward(next, Tagged::new(k, hop + 1, item), data);
                    continue;
                }
            }
            let pkt = match item {
                Item::Seg(pkt) => pkt,
                Item::Hs(p) => {
                    if let Some(c) = self.capture.as_mut() {
                        c.hs_delivered(now, k, &p);
                    }
                    self.on_hs_packet(k, p);
                    continue;
                }
            };
            if let Some(c) = self.capture.as_mut() {
                c.delivered(now, k, &pkt);
            }
            if data {
                self.conns[k].client.handle_data(now, &pkt);
                self.after_data(k);
            } else {
                self.conns[k].server.handle_ack(now, &pkt);
                self.flush_server(k);
            }
        }
        self.count_aqm_drops(l);
        self.rearm_link(l);
    }

    /// Connection `k`'s client took a data segment: the application reads, a file may be
    /// complete, and the client's ACKs go out.
    #[inline]
    fn after_data(&mut self, k: usize) {
        let now = self.now;
        if self.conns[k].joins_pending {
            self.open_joins(k);
        }
        let conn = &mut self.conns[k];
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
    }

    /// The client opens connection `k`'s other subflows (MP_JOIN), on the paths whose
    /// address it has.
    #[inline(never)]
    fn open_joins(&mut self, k: usize) {
        let now = self.now;
        self.conns[k].joins_pending = false;
        for sf in 1..self.conns[k].paths.len() {
            if !self.absent[self.conns[k].paths[sf]] && !self.conns[k].hs.started(sf) {
                let syn = self.conns[k].hs.connect(now, sf);
                self.conns[k].client.subflow_opened(sf);
                self.send_hs(k, syn);
            }
        }
        self.rearm_handshake(k);
    }

    /// Counts what the link's AQM dropped as queue drops of their subflows.
    #[inline]
    fn count_aqm_drops(&mut self, l: usize) {
        if self.links[l].stats().aqm_drops == 0 {
            return;
        }
        self.take_aqm_drops(l);
    }

    #[inline(never)]
    fn take_aqm_drops(&mut self, l: usize) {
        for Tagged { conn, item, .. } in self.links[l].take_dropped() {
            let d = &mut self.conns[conn as usize].drops[item.subflow()];
            if matches!(item, Item::Hs(_)) {
                d.handshake += 1;
            } else if l.is_multiple_of(2) {
                d.queue += 1;
            } else {
                d.ack_queue += 1;
            }
        }
    }

    fn rearm_link(&mut self, l: usize) {
        if let Some(t) = self.links[l].poll_at() {
            self.schedule(Component::Link(l), t);
        }
    }

    /// Puts a packet of connection `k` on its subflow's path: data down, ACKs up. Inline into
    /// the two flushes: the packet then goes from the socket's queue to `forward` without the
    /// copies a call by value made (`forward` itself stays a call: inlined, it cost more).
    #[inline(always)]
    fn send(&mut self, k: usize, pkt: Packet, data: bool) {
        let p = self.conns[k].paths[pkt.subflow as usize];
        let l = match (self.shared_links, data) {
            (true, _) => self.routes[p].links(data)[0],
            (false, true) => down(p),
            (false, false) => up(p),
        };
        if let Some(c) = self.capture.as_mut() {
            c.sent(self.now, k, &pkt);
        }
        self.forward(l, Tagged::seg(k, pkt), data);
    }

    /// Puts a packet on link `l` (the packet knows its connection and where it is on its
    /// route).
    fn forward(&mut self, l: usize, tagged: Tagged, data: bool) {
        let k = tagged.conn as usize;
        let sf = tagged.item.subflow();
        let handshake = matches!(tagged.item, Item::Hs(_));
        let result = self.links[l].enqueue(self.now, tagged);
        let d = &mut self.conns[k].drops[sf];
        match (result, data) {
            (Ok(()), _) => {}
            (Err(_), _) if handshake => d.handshake += 1,
            (Err(Drop::QueueFull), true) => d.queue += 1,
            (Err(Drop::Random), true) => d.random += 1,
            (Err(Drop::QueueFull), false) => d.ack_queue += 1,
            (Err(Drop::Random), false) => d.ack_random += 1,
            (Err(Drop::Outage), true) => d.outage += 1,
            (Err(Drop::Outage), false) => d.ack_outage += 1,
        }
        self.count_aqm_drops(l);
        self.rearm_link(l);
    }

    fn flush_server(&mut self, k: usize) {
        while let Some(pkt) = self.conns[k].server.poll_transmit() {
            self.send(k, pkt, true);
        }
        if let Some(t) = self.conns[k].server.poll_timeout() {
            self.schedule(Component::Server(k), t.max(self.now));
        }
    }

    fn flush_client(&mut self, k: usize) {
        while let Some(pkt) = self.conns[k].client.poll_transmit() {
            self.send(k, pkt, false);
        }
        if let Some(t) = self.conns[k].client.poll_timeout() {
            self.schedule(Component::Client(k), t.max(self.now));
        }
    }

    fn apply_changes(&mut self) {
        let now = self.now;
        while let Some(&c) = self.changes.get(self.next_change).filter(|c| at(c) <= now) {
            for (l, change) in [(down(c.path), c.down), (up(c.path), c.up)] {
                let link = &mut self.links[l];
                if let Some(r) = change.rate {
                    link.set_rate(now, r);
                }
                if let Some(d) = change.delay {
                    link.set_delay(now, d);
                }
                if let Some(j) = change.jitter {
                    link.set_jitter(now, j);
                }
                if let Some(up) = change.up {
                    for Tagged { conn, item, .. } in link.set_up(now, up) {
                        let d = &mut self.conns[conn as usize].drops[item.subflow()];
                        if matches!(item, Item::Hs(_)) {
                            d.handshake += 1;
                        } else if l == down(c.path) {
                            d.outage += 1;
                        } else {
                            d.ack_outage += 1;
                        }
                    }
                }
            }
            self.next_change += 1;
            if let Some(present) = c.present {
                self.set_present(c.path, present);
            }
            self.count_aqm_drops(down(c.path));
            self.count_aqm_drops(up(c.path));
            self.rearm_link(down(c.path));
            self.rearm_link(up(c.path));
        }
        if let Some(c) = self.changes.get(self.next_change) {
            self.schedule(Component::Schedule, at(c));
        }
    }
}

impl Simulation {
    /// The client's address on path `p` went away or came back: every open MPTCP connection
    /// with several subflows closes its subflow there, or opens it again with an MP_JOIN
    /// handshake timed over the path's route as it is now. Plain TCP has no subflow to close:
    /// to it the path is only down.
    fn set_present(&mut self, p: usize, present: bool) {
        let now = self.now;
        self.absent[p] = !present;
        for k in 0..self.conns.len() {
            let conn = &self.conns[k];
            if conn.syn_pending || !conn.mptcp || conn.paths.len() < 2 {
                continue;
            }
            let Some(sf) = conn.paths.iter().position(|&q| q == p) else {
                continue;
            };
            let conn = &mut self.conns[k];
            if present {
                // A new incarnation, with a handshake of its own.
                conn.hs.restart(sf);
                conn.server.reopen_subflow(sf);
                conn.client.open_subflow(sf);
                // Before the first subflow is up, the join waits for it.
                if conn.hs.open() {
                    let syn = conn.hs.connect(now, sf);
                    conn.client.subflow_opened(sf);
                    self.send_hs(k, syn);
                }
            } else {
                conn.hs.abort(sf);
                conn.client.close_subflow(sf);
                conn.server.close_subflow(now, sf);
            }
            self.flush_server(k);
            self.flush_client(k);
            self.rearm_handshake(k);
        }
    }
}

/// When a change applies, in the run's time.
fn at(c: &PathChange) -> Time {
    Time::ZERO + c.at
}

#[cfg(test)]
mod tests {
    use crate::build::{stms_lab, MS, S};
    use crate::Simulation;

    #[test]
    fn a_watcher_stops_the_run_where_it_says_and_the_summary_is_of_the_run_so_far() {
        let full = Simulation::new(stms_lab(100 * MS, 10 * S), false)
            .unwrap()
            .run()
            .summary;
        assert!(full.interrupted_at_s.is_none());
        let mut stop_at = None;
        let part = Simulation::new(stms_lab(100 * MS, 10 * S), false)
            .unwrap()
            .run_watched(&mut |now, _| {
                if now.as_secs_f64() >= 2.0 {
                    stop_at = Some(now);
                    return false;
                }
                true
            })
            .summary;
        let at = stop_at.unwrap().as_secs_f64();
        assert_eq!(part.interrupted_at_s, Some(at));
        // Within a watch period (16,384 events: half a second here) of 2 s, and the figures
        // are of those seconds.
        assert!((2.0..3.0).contains(&at), "{at}");
        assert_eq!(part.duration_s, at);
        assert!(part.bytes_delivered < full.bytes_delivered / 3);
        let rate = part.bytes_delivered as f64 * 8.0 / at / 1e6;
        assert!((part.goodput_mbps - rate).abs() < 1e-9);
    }
}

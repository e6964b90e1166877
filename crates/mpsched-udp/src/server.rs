//! The server, sans-IO: datagrams and the time in, datagrams (with the address each goes to)
//! and the next timer out. Each connection runs the core's `Sender` with the scheduler and
//! congestion control asked for; a subflow opens when the client's Join on a path has been
//! answered and confirmed from the same address (which proves the address, and measures the
//! handshake's RTT as a SYN/SYN-ACK/ACK would).

use crate::aead::Suite;
use crate::amplify::Budget;
use crate::convert::{ack_packet, data_frame, us, AckContext};
use crate::pool::Pool;
use crate::session::{respond, OpenError, Psk, Session};
use crate::source::Source;
use crate::timing::{DecisionCost, Timed};
use crate::wire::{Frame, Header, Kind, SubflowStats, MAX_DATAGRAM, MAX_STATS};
use mpsched_core::cc::CcKind;
use mpsched_core::conn::sender::SubflowConfig;
use mpsched_core::conn::{Sender, SenderConfig, Stack};
use mpsched_core::jiffies::Jiffies;
use mpsched_core::packet::Payload;
use mpsched_core::sched::{self, SchedParams, Scheduler};
use mpsched_core::subflow::tx::LossRecovery;
use mpsched_core::units::Bytes;
use mpsched_core::{Dur, Time};
use std::collections::{HashMap, VecDeque};
use std::net::SocketAddr;
use std::sync::Arc;

/// Paths (subflows) a connection may open.
pub const MAX_PATHS: usize = 8;
/// Connections served at once; Initials beyond are dropped.
pub const MAX_CONNS: usize = 64;
/// A connection that has heard nothing for this long is forgotten.
pub const IDLE_TIMEOUT: Dur = Dur::from_secs(30);

#[derive(Clone, Debug)]
pub struct ServerConfig {
    pub scheduler: String,
    pub scheduler_params: SchedParams,
    pub congestion: String,
    pub sndbuf: u64,
    pub stack: Stack,
    /// Take only this AEAD suite (else the fastest both ends run: `aead::pick`).
    pub aead: Option<Suite>,
}

impl Default for ServerConfig {
    fn default() -> Self {
        ServerConfig {
            scheduler: "linux".into(),
            scheduler_params: SchedParams::new(),
            congestion: "cubic".into(),
            sndbuf: 6 << 20,
            stack: Stack::Upstream,
            aead: None,
        }
    }
}

/// Datagrams dropped, by reason: none of them reaches a connection.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Drops {
    pub malformed: u64,
    pub unauthenticated: u64,
    pub replayed: u64,
    pub unknown_connection: u64,
    /// Not sent: the address had not proved itself and the budget was spent.
    pub amplification: u64,
    pub over_capacity: u64,
}

impl Drops {
    fn count(&mut self, e: OpenError) {
        match e {
            OpenError::Wire(_) => self.malformed += 1,
            OpenError::Auth => self.unauthenticated += 1,
            OpenError::Replay => self.replayed += 1,
        }
    }
}

struct Path {
    addr: SocketAddr,
    budget: Budget,
    /// The JoinAck's timestamp and when it left, until the confirming ACK.
    challenge: Option<(u32, Time)>,
    established: bool,
}

struct Conn {
    session: Session,
    sender: Sender,
    response: Vec<u8>,
    paths: Vec<Option<Path>>,
    started: bool,
    closed: bool,
    last_heard: Time,
    peer_ts: Time,
}

/// Builds each connection's scheduler (one written in Python, say) instead of the registry.
pub type SchedulerFactory = Box<dyn FnMut() -> Box<dyn Scheduler> + Send>;

pub struct Server {
    psk: Psk,
    cfg: ServerConfig,
    factory: Option<SchedulerFactory>,
    /// What the schedulers' decisions cost in real time, over every connection.
    pub cost: DecisionCost,
    source: Arc<dyn Source + Sync>,
    conns: HashMap<u32, Conn>,
    out: VecDeque<(SocketAddr, Vec<u8>)>,
    /// Datagram buffers back from the driver once sent, for the next datagrams.
    pool: Pool,
    /// A copy of a datagram handed over read-only (`handle`), opened in place.
    scratch: Vec<u8>,
    pub drops: Drops,
}

impl Server {
    /// Checks the scheduler and congestion control names first.
    pub fn new(
        psk: Psk,
        cfg: ServerConfig,
        source: Arc<dyn Source + Sync>,
    ) -> Result<Server, String> {
        sched::build(&cfg.scheduler, &cfg.scheduler_params).map_err(|e| e.to_string())?;
        CcKind::parse(&cfg.congestion).ok_or_else(|| {
            format!(
                "unknown congestion control '{}' (known: {})",
                cfg.congestion,
                CcKind::known()
            )
        })?;
        Ok(Server {
            psk,
            cfg,
            factory: None,
            cost: DecisionCost::default(),
            source,
            conns: HashMap::new(),
            out: VecDeque::new(),
            pool: Pool::default(),
            scratch: Vec::with_capacity(MAX_DATAGRAM),
            drops: Drops::default(),
        })
    }

    /// Each connection's scheduler from `factory` (`cfg.scheduler` is then only its label).
    pub fn with_scheduler(mut self, factory: SchedulerFactory) -> Server {
        self.factory = Some(factory);
        self
    }

    fn new_sender(&mut self, now: Time) -> Sender {
        let sched = match self.factory.as_mut() {
            Some(make) => make(),
            None => sched::build(&self.cfg.scheduler, &self.cfg.scheduler_params).expect("checked"),
        };
        let sched: Box<dyn Scheduler> = Box::new(Timed::new(sched, self.cost.clone()));
        let subflows = (0..MAX_PATHS)
            .map(|_| SubflowConfig {
                established_at: Time::MAX,
                handshake_rtt: Dur::ZERO,
                backup: false,
            })
            .collect();
        Sender::new(
            SenderConfig {
                mptcp: true,
                sndbuf: Bytes(self.cfg.sndbuf),
                sndbuf_autotune: true,
                stack: self.cfg.stack,
                initial_rwnd: Bytes(128 << 10),
                total: self.source.len().map(Bytes),
                app_limited: false,
                write_chunk: Some(mpsched_core::conn::DEFAULT_WRITE_CHUNK),
                subflows,
                loss_recovery: LossRecovery::Linux,
                // Timers on this clock's nanoseconds: nothing ticks here but the OS clock.
                jiffies: Jiffies::EXACT,
                trace: false,
            },
            CcKind::parse(&self.cfg.congestion)
                .expect("checked")
                .build(),
            sched,
            now,
        )
    }

    pub fn connections(&self) -> usize {
        self.conns.len()
    }

    /// A datagram from `from` (copied, then opened in place: `handle_mut` spares the copy).
    pub fn handle(&mut self, now: Time, from: SocketAddr, datagram: &[u8]) {
        let mut d = std::mem::take(&mut self.scratch);
        d.clear();
        d.extend_from_slice(datagram);
        self.handle_mut(now, from, &mut d);
        self.scratch = d;
    }

    /// A datagram from `from`, decrypted in place in its buffer.
    pub fn handle_mut(&mut self, now: Time, from: SocketAddr, datagram: &mut [u8]) {
        let header = match Header::decode(datagram) {
            Ok((h, _)) => h,
            Err(_) => {
                self.drops.malformed += 1;
                return;
            }
        };
        if header.kind == Kind::Initial {
            self.handle_initial(now, from, header.conn_id, datagram);
            return;
        }
        let Some(conn) = self.conns.get_mut(&header.conn_id) else {
            self.drops.unknown_connection += 1;
            return;
        };
        let wire_len = datagram.len() as u32;
        let frame = match conn.session.open(&header, datagram) {
            Ok(f) => f,
            Err(e) => {
                self.drops.count(e);
                return;
            }
        };
        conn.last_heard = now;
        match frame {
            Frame::Join {
                subflow, ts_val, ..
            } if usize::from(subflow) < MAX_PATHS => {
                let i = usize::from(subflow);
                let mut budget = Budget::default();
                budget.on_received(wire_len as usize);
                let known = conn.paths[i].as_ref().is_some_and(|p| p.addr == from);
                if !known {
                    conn.paths[i] = Some(Path {
                        addr: from,
                        budget,
                        challenge: None,
                        established: false,
                    });
                }
                let path = conn.paths[i].as_mut().expect("set");
                let ts = us(now);
                path.challenge.get_or_insert((ts, now));
                let (ts, _) = path.challenge.expect("set");
                let answer = Frame::JoinAck {
                    subflow,
                    gen: 0,
                    ts_val: ts,
                    ts_ecr: ts_val,
                    size: self.source.len().unwrap_or(u64::MAX),
                };
                let mut d = self.pool.take();
                conn.session.seal(&answer, &mut d);
                if path.budget.try_send(d.len()) {
                    self.out.push_back((from, d));
                } else {
                    self.drops.amplification += 1;
                }
            }
            Frame::Ack {
                subflow, ts_ecr, ..
            } => {
                let i = usize::from(subflow);
                let Some(Some(path)) = conn.paths.get_mut(i) else {
                    self.drops.malformed += 1;
                    return;
                };
                path.budget.on_received(wire_len as usize);
                if path.addr != from {
                    // The client's address changed (a NAT rebinding): data follows it, within
                    // the budget, until an ACK from there echoes what was sent there.
                    path.addr = from;
                    path.budget = Budget::default();
                    path.budget.on_received(wire_len as usize);
                    path.challenge = Some((us(now), now));
                }
                if let Some((ts, sent)) = path.challenge {
                    if ts_ecr == ts {
                        path.challenge = None;
                        path.budget.prove();
                        if !path.established {
                            path.established = true;
                            conn.sender.establish(now, i, now - sent);
                            if !conn.started {
                                conn.started = true;
                                conn.sender.start(now);
                            }
                        }
                    }
                }
                if path.established {
                    let cx = AckContext {
                        snd_una: conn.sender.subflows()[i].snd_una(),
                        data_una: conn.sender.data().una(),
                        now,
                        peer_ts: conn.peer_ts,
                    };
                    if let Some(pkt) = ack_packet(&frame, &cx, wire_len) {
                        if let Payload::Ack(a) = pkt.payload {
                            conn.peer_ts = conn.peer_ts.max(a.ts_val);
                        }
                        conn.sender.handle_ack(now, &pkt);
                    }
                }
            }
            Frame::Close { .. } => {
                conn.closed = true;
                // The client is done: the counters, to an address that proved itself.
                if let Some(path) = conn.paths.iter().flatten().find(|p| p.addr == from) {
                    if path.budget.proven() {
                        let mut d = Vec::with_capacity(512);
                        conn.session.seal(&stats_frame(&conn.sender), &mut d);
                        self.out.push_back((from, d));
                    }
                }
            }
            _ => self.drops.malformed += 1,
        }
        self.flush(now, header.conn_id);
    }

    fn handle_initial(&mut self, now: Time, from: SocketAddr, conn_id: u32, datagram: &[u8]) {
        if let Some(conn) = self.conns.get_mut(&conn_id) {
            if conn.paths[0].is_none() && datagram.len() >= conn.response.len() {
                // The Response was lost before the first Join: the same answer again (no
                // larger than the Initial).
                self.out.push_back((from, conn.response.clone()));
            } else {
                // Too late to be the client's: a replay.
                self.drops.replayed += 1;
            }
            return;
        }
        if self.conns.len() >= MAX_CONNS {
            self.drops.over_capacity += 1;
            return;
        }
        match respond(&self.psk, datagram, self.cfg.aead) {
            Ok((session, response)) => {
                // The Response is no larger than the Initial: no amplification.
                debug_assert!(response.len() <= datagram.len());
                self.out.push_back((from, response.clone()));
                let sender = self.new_sender(now);
                self.conns.insert(
                    conn_id,
                    Conn {
                        session,
                        sender,
                        response,
                        paths: (0..MAX_PATHS).map(|_| None).collect(),
                        started: false,
                        closed: false,
                        last_heard: now,
                        peer_ts: Time::ZERO,
                    },
                );
            }
            Err(e) => self.drops.count(e),
        }
    }

    /// Seals what connection `id`'s sender has to send.
    fn flush(&mut self, now: Time, id: u32) {
        let Some(conn) = self.conns.get_mut(&id) else {
            return;
        };
        let mss = u64::from(conn.sender.data().mss());
        while let Some(pkt) = conn.sender.poll_transmit() {
            let Payload::Data(seg) = pkt.payload else {
                continue;
            };
            let Some(Some(path)) = conn.paths.get_mut(usize::from(pkt.subflow)) else {
                continue;
            };
            // The segment's bytes are read straight into the datagram, after the frame's
            // fields, and sealed there: no copy, no allocation once the pool is warm.
            let len = seg.len as usize;
            let mut d = self.pool.take();
            let source = &self.source;
            let read = conn.session.seal_with(Kind::Data, &mut d, |out| {
                data_frame(&pkt, &seg, &[]).encode(out);
                let at = out.len();
                out.resize(at + len, 0);
                source.read_at(seg.dseq * mss, &mut out[at..])
            });
            if read.is_err() {
                self.pool.give(d);
                continue;
            }
            if path.budget.try_send(d.len()) {
                self.out.push_back((path.addr, d));
            } else {
                self.drops.amplification += 1;
            }
        }
        if conn.sender.data().finished() && !conn.closed {
            conn.closed = true;
            for path in conn.paths.iter_mut().flatten().filter(|p| p.established) {
                let mut d = vec![];
                conn.session.seal(&stats_frame(&conn.sender), &mut d);
                self.out.push_back((path.addr, d));
                let mut d = vec![];
                conn.session.seal(&Frame::Close { code: 0 }, &mut d);
                self.out.push_back((path.addr, d));
            }
        }
        let _ = now;
    }

    pub fn poll_transmit(&mut self) -> Option<(SocketAddr, Vec<u8>)> {
        self.out.pop_front()
    }

    /// A datagram's buffer back once sent, to be reused.
    pub fn recycle(&mut self, buf: Vec<u8>) {
        self.pool.give(buf);
    }

    pub fn poll_timeout(&self) -> Option<Time> {
        self.conns
            .values()
            .map(|c| {
                let idle = c.last_heard + IDLE_TIMEOUT;
                c.sender.poll_timeout().map_or(idle, |t| t.min(idle))
            })
            .min()
    }

    pub fn handle_timeout(&mut self, now: Time) {
        self.conns.retain(|_, c| {
            now < c.last_heard + IDLE_TIMEOUT
                && !(c.closed
                    && c.sender.data().finished()
                    && now > c.last_heard + Dur::from_secs(2))
        });
        let ids: Vec<u32> = self.conns.keys().copied().collect();
        for id in ids {
            let conn = self.conns.get_mut(&id).expect("listed");
            if conn.sender.poll_timeout().is_some_and(|t| t <= now) {
                conn.sender.handle_timeout(now);
            }
            self.flush(now, id);
        }
    }

    /// Bytes each subflow of connection `id` has sent (payload, retransmissions included).
    pub fn sender(&self, id: u32) -> Option<&Sender> {
        self.conns.get(&id).map(|c| &c.sender)
    }
}

/// The sender's counters per subflow that has sent anything.
fn stats_frame(sender: &Sender) -> Frame<'static> {
    let mut subflows = [SubflowStats::default(); MAX_STATS];
    let mut count = 0;
    for (i, sf) in sender.subflows().iter().enumerate().take(MAX_STATS) {
        if sf.stats.packets_sent == 0 {
            continue;
        }
        let us = |d: Option<Dur>| d.map_or(0, |d| d.as_micros().min(u64::from(u32::MAX)) as u32);
        subflows[count] = SubflowStats {
            subflow: i as u8,
            bytes_sent: sf.stats.bytes_sent,
            packets_sent: sf.stats.packets_sent,
            retransmits: sf.stats.retransmits.min(u64::from(u32::MAX)) as u32,
            rtos: sf.stats.rtos.min(u64::from(u32::MAX)) as u32,
            fast_recoveries: sf.stats.fast_recoveries.min(u64::from(u32::MAX)) as u32,
            tlp_probes: sf.stats.tlp_probes.min(u64::from(u32::MAX)) as u32,
            srtt_us: us(sf.rtt().srtt()),
            min_rtt_us: us(sf.rtt().min_rtt()),
            cwnd: sf.cc.cwnd,
        };
        count += 1;
    }
    Frame::Stats {
        count: count as u8,
        subflows,
    }
}

//! The server, sans-IO: datagrams and the time in, datagrams (with the address each goes to)
//! and the next timer out. Each connection runs the core's `Sender` with the scheduler and
//! congestion control asked for; a subflow opens when the client's Join on a path has been
//! answered with a random challenge and the client's Proof came back from the same address
//! (which proves the address, and measures the handshake's RTT as a SYN/SYN-ACK/ACK would).
//! Path 0's Join from the Initial's address needs no challenge: only the receiver of the
//! Response holds the keys that seal it, so it opens the subflow at once (its RTT the
//! Response's round trip), and data follows the handshake as a TCP server's does.
//!
//! Addresses move (NAT rebinding): a path follows a new address only once a challenge sent
//! there has come back, and only a datagram with the highest packet number yet starts that;
//! meanwhile data keeps going to the proven address (RFC 9000 9.3).

use crate::admit::{unix_now_ns, CookieJar, Refusal, ReplayCache};
use crate::aead::Suite;
use crate::amplify::Budget;
use crate::convert::{ack_packet, data_frame, AckContext};
use crate::path::{
    self, base_datagram, hold_time, Path, Validation, CHALLENGE_RETRY, CHALLENGE_TRIES,
    HOLD_DATAGRAMS,
};
use crate::pool::Pool;
use crate::session::{
    cookie_reply, initial_mac1_ok, initial_mac2_ok, reset_datagram, respond, Psk, Session,
    INITIAL_LEN, MAC_LEN, RESET_LEN,
};
use crate::source::{Offset, Source};
use crate::timing::{DecisionCost, Timed};
use crate::wire::{
    Frame, Header, Kind, Part, SubflowStats, DATA_FIELDS, HEADER_LEN, MAX_DATAGRAM, MAX_STATS,
    NO_PROOF, TAG_LEN,
};
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
use std::fmt;
use std::net::SocketAddr;
use std::sync::Arc;

pub use crate::drops::Drops;
pub use crate::wire::MAX_PATHS;
/// Connections served at once; Initials beyond are dropped.
pub const MAX_CONNS: usize = 64;
/// A connection that has heard nothing for this long is forgotten (unless the client asked
/// for less).
pub const IDLE_TIMEOUT: Dur = Dur::from_secs(30);
/// A connection whose client has not sent one authenticated datagram after its Response
/// (half-open) is forgotten after this long: the client gives up on the handshake sooner.
pub const HANDSHAKE_TIMEOUT: Dur = Dur::from_secs(10);
/// Half-open connections from one IP address at once.
pub const HALF_OPEN_PER_SOURCE: usize = 4;
#[derive(Clone, Debug)]
pub struct ServerConfig {
    pub scheduler: String,
    pub scheduler_params: SchedParams,
    pub congestion: String,
    pub sndbuf: u64,
    pub stack: Stack,
    /// The longest silence a connection survives (the client may ask for less).
    pub idle_timeout: Dur,
    /// Connections at once.
    pub max_conns: usize,
    /// From this share of `max_conns` half-open on, an Initial is answered with a cookie
    /// unless it carries a valid one (the server is under load).
    pub cookie_share: f64,
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
            idle_timeout: IDLE_TIMEOUT,
            max_conns: MAX_CONNS,
            cookie_share: 0.25,
            aead: None,
        }
    }
}

/// A `ServerConfig` refused: the scheduler or the congestion control it names. Displayed as
/// the messages always were.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ServerConfigError {
    /// The scheduler cannot be built (`scheduler`, `scheduler_params`).
    Scheduler(sched::BuildError),
    /// No congestion control has this name (`congestion`).
    Congestion(String),
}

impl fmt::Display for ServerConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ServerConfigError::Scheduler(e) => e.fmt(f),
            ServerConfigError::Congestion(name) => write!(
                f,
                "unknown congestion control '{name}' (known: {})",
                CcKind::known()
            ),
        }
    }
}

impl std::error::Error for ServerConfigError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            ServerConfigError::Scheduler(e) => Some(e),
            ServerConfigError::Congestion(_) => None,
        }
    }
}

/// For the callers whose own errors are still messages.
impl From<ServerConfigError> for String {
    fn from(e: ServerConfigError) -> String {
        e.to_string()
    }
}

/// What the server sent without a connection: cookie replies (under load) and stateless
/// resets (to connection ids it does not know).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Answers {
    pub cookies: u64,
    pub resets: u64,
    /// Paths that moved to a new address, once it proved itself.
    pub migrations: u64,
}

struct Conn {
    session: Session,
    sender: Sender,
    /// The stream from the offset the client asked for.
    source: Arc<dyn Source + Sync>,
    /// The whole stream's length (the client checks its resumed part against it).
    whole_len: Option<u64>,
    response: Vec<u8>,
    /// The Initial's mac1: a copy of it is the lost-Response case.
    mac1: [u8; MAC_LEN],
    /// Where the Initial came from (half-open per source), and when the Response last went
    /// there: a Join from `origin` under the session's keys proves it (path 0 opens at once).
    origin: SocketAddr,
    response_sent: Time,
    /// An authenticated datagram came under the connection's keys: no longer half-open.
    open: bool,
    created: Time,
    idle: Dur,
    paths: Vec<Option<Path>>,
    started: bool,
    closed: bool,
    last_heard: Time,
    peer_ts: Time,
}

impl Conn {
    fn deadline(&self) -> Time {
        if self.open {
            self.last_heard + self.idle
        } else {
            self.created + HANDSHAKE_TIMEOUT
        }
    }
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
    /// By the handshake's connection id.
    conns: HashMap<u32, Conn>,
    /// Each path's connection id -> the handshake's.
    ids: HashMap<u32, u32>,
    replay: ReplayCache,
    cookies: CookieJar,
    /// Unix time (ns) at `Time::ZERO`: the clock Initials are checked against.
    unix_at_zero: u64,
    out: VecDeque<(SocketAddr, Vec<u8>)>,
    /// Datagram buffers back from the driver once sent, for the next datagrams.
    pool: Pool,
    /// A copy of a datagram handed over read-only (`handle`), opened in place.
    scratch: Vec<u8>,
    /// A segment's bytes when the path takes it in two halves (`Part`).
    payload: Vec<u8>,
    pub drops: Drops,
    pub answers: Answers,
}

impl Server {
    /// Checks the scheduler and congestion control names first.
    pub fn new(
        psk: Psk,
        cfg: ServerConfig,
        source: Arc<dyn Source + Sync>,
    ) -> Result<Server, ServerConfigError> {
        sched::build(&cfg.scheduler, &cfg.scheduler_params)
            .map_err(ServerConfigError::Scheduler)?;
        CcKind::parse(&cfg.congestion)
            .ok_or_else(|| ServerConfigError::Congestion(cfg.congestion.clone()))?;
        Ok(Server {
            psk,
            cfg,
            factory: None,
            cost: DecisionCost::default(),
            source,
            conns: HashMap::new(),
            ids: HashMap::new(),
            replay: ReplayCache::default(),
            cookies: CookieJar::new(Time::ZERO),
            unix_at_zero: unix_now_ns(),
            out: VecDeque::new(),
            pool: Pool::default(),
            scratch: Vec::with_capacity(MAX_DATAGRAM),
            payload: vec![0; MAX_DATAGRAM],
            drops: Drops::default(),
            answers: Answers::default(),
        })
    }

    /// Each connection's scheduler from `factory` (`cfg.scheduler` is then only its label).
    pub fn with_scheduler(mut self, factory: SchedulerFactory) -> Server {
        self.factory = Some(factory);
        self
    }

    /// The Unix time (ns) that `Time::ZERO` stands for (the driver's clock start; by default
    /// the server's creation).
    pub fn set_unix_at_zero(&mut self, unix_ns: u64) {
        self.unix_at_zero = unix_ns;
    }

    fn new_sender(&mut self, now: Time, total: Option<u64>) -> Sender {
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
                total: total.map(Bytes),
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

    /// Connections that have not yet sent an authenticated datagram after their Response.
    pub fn half_open(&self) -> usize {
        self.conns.values().filter(|c| !c.open).count()
    }

    /// Initials remembered against replay.
    pub fn replay_cache_len(&self) -> usize {
        self.replay.len()
    }

    /// Each path's address and whether it is proven, of the connection whose handshake id
    /// is `id`.
    pub fn paths(&self, id: u32) -> Vec<(usize, SocketAddr, bool)> {
        self.conns.get(&id).map_or_else(Vec::new, |c| {
            c.paths
                .iter()
                .enumerate()
                .filter_map(|(i, p)| p.as_ref().map(|p| (i, p.addr, p.budget.proven())))
                .collect()
        })
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
        let len = datagram.len();
        let header = match Header::decode(datagram) {
            Ok((h, _)) => h,
            Err(_) => {
                self.drops.malformed += 1;
                return;
            }
        };
        match header.kind {
            Kind::Initial => return self.handle_initial(now, from, header.conn_id, datagram),
            // The server's own kinds never come to it.
            Kind::Response | Kind::Cookie | Kind::Reset => {
                self.drops.malformed += 1;
                return;
            }
            _ => {}
        }
        let Some(conn) = self
            .ids
            .get(&header.conn_id)
            .and_then(|hs| self.conns.get_mut(hs))
        else {
            self.drops.unknown_connection += 1;
            // A stateless reset (smaller than what came: no amplification, no loop), so
            // that a client of a server that restarted stops at once.
            if len > RESET_LEN {
                self.out
                    .push_back((from, reset_datagram(&self.psk, header.conn_id)));
                self.answers.resets += 1;
            }
            return;
        };
        let opened = match conn.session.open(&header, datagram) {
            Ok(o) => o,
            Err(e) => {
                self.drops.count(e);
                if conn.session.keys_spent() {
                    // Too many forgeries for the keys to be trusted (RFC 9001 6.6): the
                    // connection ends; its client sees a reset and starts anew.
                    let hs = self.ids[&header.conn_id];
                    if let Some(c) = self.conns.remove(&hs) {
                        for id in c.session.path_ids() {
                            self.ids.remove(id);
                        }
                    }
                }
                return;
            }
        };
        let (i, highest, frame) = (opened.path, opened.highest, opened.frame);
        conn.last_heard = now;
        conn.open = true;
        if frame.subflow().is_some_and(|s| usize::from(s) != i) {
            // A frame must name the path its connection id does.
            self.drops.malformed += 1;
            return;
        }
        if let Frame::Join { ts_val, .. } = frame {
            Self::on_join(
                conn,
                &mut self.out,
                &mut self.drops,
                i,
                from,
                len,
                highest,
                ts_val,
                now,
            );
            let hs = self.ids[&header.conn_id];
            self.flush(now, hs);
            return;
        }
        let Some(path) = conn.paths[i].as_mut() else {
            // Nothing but a Join opens a path.
            self.drops.malformed += 1;
            return;
        };
        if from == path.addr {
            path.budget.on_received(len);
        } else {
            let hold = hold_time(&conn.sender, i);
            path::on_moved(
                &mut conn.session,
                path,
                &mut self.out,
                &mut self.drops,
                (i, hold),
                from,
                len,
                highest,
                now,
            );
        }
        match frame {
            Frame::Proof { data, .. }
                if from == path.addr && path.probe.is_some_and(|(p, _, _)| p == data) =>
            {
                // A full-size datagram crossed the path: segments go whole from now on.
                path.probe = None;
                path.max_datagram = MAX_DATAGRAM;
            }
            Frame::Proof { data, .. } => {
                let ok = path
                    .pending
                    .as_ref()
                    .is_some_and(|v| v.addr == from && v.data == data);
                if !ok {
                    self.drops.failed_proof += 1;
                    return;
                }
                let v = path.pending.take().expect("checked");
                if path.addr != from {
                    self.answers.migrations += 1;
                    if base_datagram(from) != base_datagram(path.addr) {
                        path.max_datagram = base_datagram(from);
                        path.probe = None;
                    }
                }
                path.addr = from;
                path.budget = v.budget;
                path.budget.prove();
                path.release(&mut self.out);
                if !path.established {
                    Self::establish(conn, &mut self.out, i, now, now - v.sent);
                }
                let path = conn.paths[i].as_mut().expect("matched");
                if path.max_datagram < MAX_DATAGRAM && path.probe.is_none() {
                    path::probe(&mut conn.session, path, &mut self.out, i, now, 1);
                }
            }
            Frame::Challenge { data, .. } => {
                // The client's keepalive (or its own check): answered where it came from.
                let mut d = self.pool.take();
                conn.session.seal(
                    i,
                    &Frame::Proof {
                        subflow: i as u8,
                        data,
                    },
                    &mut d,
                );
                let budget = if from == path.addr {
                    Some(&mut path.budget)
                } else {
                    path.pending
                        .as_mut()
                        .filter(|v| v.addr == from)
                        .map(|v| &mut v.budget)
                };
                if budget.is_some_and(|b| b.try_send(d.len())) {
                    self.out.push_back((from, d));
                } else {
                    self.drops.amplification += 1;
                }
            }
            Frame::Ack { .. } if path.established => {
                let cx = AckContext {
                    snd_una: conn.sender.subflows()[i].snd_una(),
                    data_una: conn.sender.data().una(),
                    now,
                    peer_ts: conn.peer_ts,
                };
                if let Some(pkt) = ack_packet(&frame, &cx, len as u32) {
                    if let Payload::Ack(a) = pkt.payload {
                        conn.peer_ts = conn.peer_ts.max(a.ts_val);
                    }
                    conn.sender.handle_ack(now, &pkt);
                }
            }
            // Before the Proof: nothing to acknowledge yet.
            Frame::Ack { .. } => {}
            Frame::Close { .. } => {
                conn.closed = true;
                // The client is done: the counters, to an address that proved itself.
                if path.addr == from && path.budget.proven() {
                    let mut d = Vec::with_capacity(512);
                    conn.session.seal(i, &stats_frame(&conn.sender), &mut d);
                    self.out.push_back((from, d));
                }
            }
            _ => self.drops.malformed += 1,
        }
        let hs = self.ids[&header.conn_id];
        self.flush(now, hs);
    }

    /// A Join on path `i`: the path opens (a challenge to its address), or its JoinAck went
    /// missing (the same challenge again). It never replaces a path that carries data.
    #[allow(clippy::too_many_arguments)]
    fn on_join(
        conn: &mut Conn,
        out: &mut VecDeque<(SocketAddr, Vec<u8>)>,
        drops: &mut Drops,
        i: usize,
        from: SocketAddr,
        len: usize,
        highest: bool,
        ts_val: u32,
        now: Time,
    ) {
        let fresh = || {
            let mut budget = Budget::default();
            budget.on_received(len);
            Path {
                addr: from,
                budget,
                pending: Some(Validation {
                    addr: from,
                    data: crate::random::challenge(),
                    sent: now,
                    tries: 1,
                    budget: Budget::default(),
                }),
                established: false,
                held: VecDeque::new(),
                hold_until: None,
                max_datagram: base_datagram(from),
                probe: None,
            }
        };
        let proven = i == 0 && from == conn.origin;
        match conn.paths[i].as_mut() {
            None if proven => {
                // Only whoever received the Response at `origin` holds the keys that sealed
                // this Join (they follow from the server's ephemeral key): the handshake proved
                // the address, as a QUIC server's Handshake packet does (RFC 9000 8.1). The
                // path opens now, with the Response-to-Join round trip as its handshake RTT
                // (a TCP server's SYN-ACK to ACK), and the JoinAck asks for no Proof.
                let mut budget = Budget::default();
                budget.prove();
                conn.paths[i] = Some(Path {
                    addr: from,
                    budget,
                    pending: None,
                    established: false,
                    held: VecDeque::new(),
                    hold_until: None,
                    max_datagram: base_datagram(from),
                    probe: None,
                });
                let rtt = now - conn.response_sent;
                Self::join_ack(conn, out, drops, i, ts_val, NO_PROOF);
                Self::establish(conn, out, i, now, rtt);
                return;
            }
            None => conn.paths[i] = Some(fresh()),
            Some(p) if !p.established && p.addr != from => {
                // Not yet carrying anything: the newest Join decides where it goes.
                if !highest {
                    drops.replayed += 1;
                    return;
                }
                conn.paths[i] = Some(fresh());
            }
            Some(p) if p.addr == from => {
                p.budget.on_received(len);
                if let Some(v) = p.pending.as_mut().filter(|v| v.addr == from) {
                    v.sent = now;
                }
            }
            Some(p) => {
                // An established path: a Join from elsewhere is at most a move to check.
                let hold = hold_time(&conn.sender, i);
                path::on_moved(
                    &mut conn.session,
                    p,
                    out,
                    drops,
                    (i, hold),
                    from,
                    len,
                    highest,
                    now,
                );
                return;
            }
        }
        let p = conn.paths[i].as_ref().expect("set");
        let challenge = if p.established && p.pending.is_none() {
            // Its JoinAck went missing after the path opened: no challenge is out.
            NO_PROOF
        } else {
            p.pending
                .as_ref()
                .filter(|v| v.addr == p.addr)
                .map_or_else(crate::random::challenge, |v| v.data)
        };
        Self::join_ack(conn, out, drops, i, ts_val, challenge);
    }

    /// Path `i`'s JoinAck, to its address within its budget.
    fn join_ack(
        conn: &mut Conn,
        out: &mut VecDeque<(SocketAddr, Vec<u8>)>,
        drops: &mut Drops,
        i: usize,
        ts_val: u32,
        challenge: u64,
    ) {
        let answer = Frame::JoinAck {
            subflow: i as u8,
            gen: 0,
            ts_ecr: ts_val,
            size: conn.whole_len.unwrap_or(u64::MAX),
            challenge,
        };
        let mut d = Vec::with_capacity(64);
        conn.session.seal(i, &answer, &mut d);
        let p = conn.paths[i].as_mut().expect("set");
        if p.budget.try_send(d.len()) {
            out.push_back((p.addr, d));
        } else {
            drops.amplification += 1;
        }
    }

    /// Path `i`'s address proved itself for the first time: its subflow opens (the first
    /// one starts the sender), and a path held to smaller datagrams probes for whole ones.
    fn establish(
        conn: &mut Conn,
        out: &mut VecDeque<(SocketAddr, Vec<u8>)>,
        i: usize,
        now: Time,
        rtt: Dur,
    ) {
        let path = conn.paths[i].as_mut().expect("set");
        path.established = true;
        conn.sender.establish(now, i, rtt);
        if !conn.started {
            conn.started = true;
            conn.sender.start(now);
        }
        if path.max_datagram < MAX_DATAGRAM && path.probe.is_none() {
            path::probe(&mut conn.session, path, out, i, now, 1);
        }
    }

    fn handle_initial(&mut self, now: Time, from: SocketAddr, hs_id: u32, datagram: &[u8]) {
        // Cheap checks first: the size and the MAC under the secret (no Diffie-Hellman for
        // a datagram without the key).
        if datagram.len() != INITIAL_LEN {
            self.drops.malformed += 1;
            return;
        }
        if !initial_mac1_ok(&self.psk, datagram) {
            self.drops.unauthenticated += 1;
            return;
        }
        let mut mac1 = [0u8; MAC_LEN];
        mac1.copy_from_slice(&datagram[INITIAL_LEN - 2 * MAC_LEN..INITIAL_LEN - MAC_LEN]);
        if let Some(conn) = self.conns.get_mut(&hs_id) {
            if !conn.open && conn.mac1 == mac1 {
                // The Response was lost: the same answer again (smaller than the Initial).
                self.out.push_back((from, conn.response.clone()));
                conn.response_sent = now;
            } else {
                self.drops.replayed += 1;
            }
            return;
        }
        if self.replay.seen(&mac1) {
            self.drops.replayed += 1;
            return;
        }
        let half_open = self.half_open();
        let under_load = half_open as f64 >= self.cfg.cookie_share * self.cfg.max_conns as f64;
        if under_load
            && !self
                .cookies
                .valid(from, now)
                .any(|c| initial_mac2_ok(&c, datagram))
        {
            // Nothing allocated until the client shows it receives at `from`.
            let cookie = self.cookies.cookie(from, now);
            self.out
                .push_back((from, cookie_reply(&self.psk, datagram, &cookie)));
            self.answers.cookies += 1;
            return;
        }
        let from_here = self
            .conns
            .values()
            .filter(|c| !c.open && c.origin.ip() == from.ip())
            .count();
        if self.conns.len() >= self.cfg.max_conns || from_here >= HALF_OPEN_PER_SOURCE {
            self.drops.over_capacity += 1;
            return;
        }
        let idle_ms = (self.cfg.idle_timeout.0 / 1_000_000).min(u64::from(u32::MAX)) as u32;
        let accepted = match respond(&self.psk, datagram, idle_ms, self.cfg.aead) {
            Ok(a) => a,
            Err(e) => return self.drops.count(e),
        };
        let unix_now = self.unix_at_zero.saturating_add(now.0);
        match self.replay.admit(&mac1, accepted.hello.unix_ns, unix_now) {
            Ok(()) => {}
            Err(Refusal::Stale) => return self.drops.stale += 1,
            Err(Refusal::Replayed) => return self.drops.replayed += 1,
            Err(Refusal::Full) => return self.drops.over_capacity += 1,
        }
        let ids = *accepted.session.path_ids();
        if ids.iter().any(|id| self.ids.contains_key(id)) {
            // Another connection's path id (one chance in ~10^7): the client tries again.
            self.drops.over_capacity += 1;
            return;
        }
        let source: Arc<dyn Source + Sync> = Arc::new(Offset {
            inner: self.source.clone(),
            start: accepted.hello.offset,
        });
        let sender = self.new_sender(now, source.len());
        self.out.push_back((from, accepted.response.clone()));
        for id in ids {
            self.ids.insert(id, hs_id);
        }
        self.conns.insert(
            hs_id,
            Conn {
                session: accepted.session,
                sender,
                source,
                whole_len: self.source.len(),
                response: accepted.response,
                mac1,
                origin: from,
                response_sent: now,
                open: false,
                created: now,
                idle: Dur::from_millis(u64::from(accepted.hello.idle_ms.max(1_000))),
                paths: (0..MAX_PATHS).map(|_| None).collect(),
                started: false,
                closed: false,
                last_heard: now,
                peer_ts: Time::ZERO,
            },
        );
    }

    /// Seals what connection `hs`'s sender has to send.
    fn flush(&mut self, now: Time, hs: u32) {
        let Some(conn) = self.conns.get_mut(&hs) else {
            return;
        };
        let mss = u64::from(conn.sender.data().mss());
        while let Some(pkt) = conn.sender.poll_transmit() {
            let Payload::Data(seg) = pkt.payload else {
                continue;
            };
            let i = usize::from(pkt.subflow);
            let Some(Some(path)) = conn.paths.get_mut(i) else {
                continue;
            };
            let len = seg.len as usize;
            let hold = path.hold_until.is_some_and(|t| now < t);
            if HEADER_LEN + DATA_FIELDS + len + TAG_LEN <= path.max_datagram {
                // The segment's bytes are read straight into the datagram, after the frame's
                // fields, and sealed there: no copy, no allocation once the pool is warm.
                let mut d = self.pool.take();
                let source = &conn.source;
                let read = conn.session.seal_with(i, Kind::Data, &mut d, |out| {
                    data_frame(&pkt, &seg, &[]).encode(out);
                    let at = out.len();
                    out.resize(at + len, 0);
                    source.read_at(seg.dseq * mss, &mut out[at..])
                });
                if read.is_err() {
                    self.pool.give(d);
                } else if hold && path.held.len() < HOLD_DATAGRAMS {
                    path.held.push_back(d);
                } else if path.budget.try_send(d.len()) {
                    self.out.push_back((path.addr, d));
                } else {
                    self.drops.amplification += 1;
                    self.pool.give(d);
                }
                continue;
            }
            let buf = &mut self.payload[..len];
            if conn.source.read_at(seg.dseq * mss, buf).is_err() {
                continue;
            }
            // Too large for the path: two datagrams, each half of the segment.
            let whole = data_frame(&pkt, &seg, buf);
            let (a, b) = buf.split_at(len.div_ceil(2));
            let half = |part, payload| match whole {
                Frame::Data {
                    subflow,
                    gen,
                    probe,
                    seq,
                    dseq,
                    ts_val,
                    ts_ecr,
                    ..
                } => Frame::Data {
                    subflow,
                    gen,
                    probe,
                    part,
                    seq,
                    dseq,
                    ts_val,
                    ts_ecr,
                    payload,
                },
                _ => unreachable!(),
            };
            for frame in [half(Part::First, a), half(Part::Second, b)] {
                let mut d = self.pool.take();
                conn.session.seal(i, &frame, &mut d);
                if hold && path.held.len() < HOLD_DATAGRAMS {
                    path.held.push_back(d);
                } else if path.budget.try_send(d.len()) {
                    self.out.push_back((path.addr, d));
                } else {
                    self.drops.amplification += 1;
                    self.pool.give(d);
                }
            }
        }
        if conn.sender.data().finished() && !conn.closed {
            conn.closed = true;
            for (i, path) in conn.paths.iter_mut().enumerate() {
                let Some(path) = path.as_mut().filter(|p| p.established) else {
                    continue;
                };
                let mut d = vec![];
                conn.session.seal(i, &stats_frame(&conn.sender), &mut d);
                self.out.push_back((path.addr, d));
                let mut d = vec![];
                conn.session.seal(i, &Frame::Close { code: 0 }, &mut d);
                self.out.push_back((path.addr, d));
            }
        }
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
                let retry = c
                    .paths
                    .iter()
                    .flatten()
                    .filter(|p| p.established)
                    .filter_map(|p| p.pending.as_ref())
                    .map(|v| v.sent + CHALLENGE_RETRY)
                    .min();
                let hold = c.paths.iter().flatten().filter_map(|p| p.hold_until).min();
                let probe = c
                    .paths
                    .iter()
                    .flatten()
                    .filter_map(|p| p.probe.map(|(_, sent, _)| sent + CHALLENGE_RETRY))
                    .min();
                [c.sender.poll_timeout(), retry, hold, probe]
                    .into_iter()
                    .flatten()
                    .fold(c.deadline(), Time::min)
            })
            .min()
    }

    pub fn handle_timeout(&mut self, now: Time) {
        let ids = &mut self.ids;
        self.conns.retain(|_, c| {
            let keep = now < c.deadline()
                && !(c.closed
                    && c.sender.data().finished()
                    && now > c.last_heard + Dur::from_secs(2));
            if !keep {
                for id in c.session.path_ids() {
                    ids.remove(id);
                }
            }
            keep
        });
        let hs_ids: Vec<u32> = self.conns.keys().copied().collect();
        for hs in hs_ids {
            let conn = self.conns.get_mut(&hs).expect("listed");
            for (i, path) in conn.paths.iter_mut().enumerate() {
                let Some(path) = path.as_mut().filter(|p| p.established) else {
                    continue;
                };
                if path.hold_until.is_some_and(|t| now >= t) {
                    // No proof in time: the held datagrams go where the path was.
                    path.release(&mut self.out);
                }
                if let Some((_, sent, tries)) = path.probe {
                    if now >= sent + CHALLENGE_RETRY {
                        if tries >= CHALLENGE_TRIES {
                            // Full-size datagrams do not cross: split segments it is.
                            path.probe = None;
                        } else {
                            path::probe(&mut conn.session, path, &mut self.out, i, now, tries + 1);
                        }
                    }
                }
                let Some(v) = path.pending.as_mut() else {
                    continue;
                };
                if now < v.sent + CHALLENGE_RETRY {
                    continue;
                }
                if v.tries >= CHALLENGE_TRIES {
                    // No answer from there: the path stays where it was.
                    path.pending = None;
                    continue;
                }
                v.tries += 1;
                v.sent = now;
                path::challenge(&mut conn.session, v, &mut self.out, &mut self.drops, i);
            }
            if conn.sender.poll_timeout().is_some_and(|t| t <= now) {
                conn.sender.handle_timeout(now);
            }
            self.flush(now, hs);
        }
    }

    /// The sender of the connection whose handshake id is `id`.
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::source::Pattern;

    fn refusal(cfg: ServerConfig) -> ServerConfigError {
        let psk = Psk::from_secret(b"buSuzgbRxSxu93c2DEIjCzkDV70SLX6gxfQrEThmej0=").unwrap();
        Server::new(psk, cfg, Arc::new(Pattern { len: None }))
            .err()
            .expect("refused")
    }

    /// Each refusal is its variant, displayed as the message it always was.
    #[test]
    fn a_bad_scheduler_or_congestion_control_is_refused() {
        let e = refusal(ServerConfig {
            congestion: "vegas".into(),
            ..ServerConfig::default()
        });
        assert_eq!(e, ServerConfigError::Congestion("vegas".into()));
        assert_eq!(
            e.to_string(),
            format!(
                "unknown congestion control 'vegas' (known: {})",
                CcKind::known()
            )
        );
        let e = refusal(ServerConfig {
            scheduler: "nope".into(),
            ..ServerConfig::default()
        });
        assert!(
            matches!(
                &e,
                ServerConfigError::Scheduler(sched::BuildError::UnknownScheduler(_))
            ),
            "{e:?}"
        );
        assert!(
            String::from(e).starts_with("unknown scheduler 'nope' (known: "),
            "as the core says it"
        );
    }
}

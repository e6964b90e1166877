//! The client, sans-IO: it opens the connection on path 0 (the Noise handshake), then a
//! subflow on every path (Join, the server's JoinAck with a random challenge, and a Proof that
//! carries it back from the same address; path 0's address the handshake proved already), and runs the core's `Receiver`: ACKs out, the
//! stream's bytes in order. It knows when to stop: no authenticated answer to the handshake
//! within `HANDSHAKE_GIVE_UP`, nothing authenticated for the idle timeout, or the server's
//! stateless reset; bad answers are counted and ignored, never fatal.

use crate::admit::unix_now_ns;
use crate::aead::{Offer, Suite};
use crate::convert::{ack_frame, data_packet, from_us, us, DataContext};
use crate::halves::Halves;
use crate::pool::Pool;
use crate::reassembly::Reassembly;
use crate::session::{is_reset, ClientHandshake, Hello, OpenError, Psk, Session};
use crate::wire::{Frame, Header, Kind, Part, SubflowStats, MAX_DATAGRAM, NO_PROOF};
use mpsched_core::conn::{Reader, Receiver, ReceiverConfig, Stack};
use mpsched_core::jiffies::Jiffies;
use mpsched_core::packet::Payload;
use mpsched_core::subflow::rx::AckPolicy;
use mpsched_core::trace::DeliveryTrace;
use mpsched_core::units::{wire, Bytes};
use mpsched_core::{Dur, Time};
use std::collections::VecDeque;
use std::fmt;
use std::io;

/// The handshake's and the Joins' first retransmission timeout (Linux's SYN timeout).
pub const RETRY: Dur = Dur::from_secs(1);
pub const RETRIES: u32 = 6;
/// No authenticated answer to the Initial for this long: the server is not there, or does
/// not hold the same secret (it answers nothing then, by design).
pub const HANDSHAKE_GIVE_UP: Dur = Dur::from_secs(10);
/// After a silence a challenge asks the server whether it is still there (its Proof is the
/// answer), and again as long as the silence lasts: after four handshake round trips, within
/// these bounds. Short, because a path whose NAT moved is silent until the client sends
/// something from the new address (the server only learns of the move then).
pub const KEEPALIVE_MIN: Dur = Dur::from_millis(100);
pub const KEEPALIVE: Dur = Dur::from_secs(1);

#[derive(Clone, Debug)]
pub struct ClientConfig {
    pub paths: usize,
    pub rcvbuf: u64,
    pub stack: Stack,
    /// Record each data segment's arrival and delivery (`Client::take_delivery`).
    pub trace: bool,
    /// The longest silence the connection survives (the server may ask for less).
    pub idle_timeout: Dur,
    /// The stream's first byte to ask for (a resumed download).
    pub offset: u64,
    /// Offer only this AEAD suite (else every one, the server picks: `aead::pick`).
    pub aead: Option<Suite>,
    /// How often in-order segments are ACKed: Linux's (the default, which fidelity runs
    /// keep) or fewer (`AckPolicy`, ACK_FREQUENCY's way).
    pub ack_policy: AckPolicy,
}

impl Default for ClientConfig {
    fn default() -> Self {
        ClientConfig {
            paths: 1,
            rcvbuf: 6 << 20,
            stack: Stack::Upstream,
            trace: false,
            idle_timeout: crate::server::IDLE_TIMEOUT,
            offset: 0,
            aead: None,
            ack_policy: AckPolicy::LINUX,
        }
    }
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ClientDrops {
    pub malformed: u64,
    pub unauthenticated: u64,
    pub replayed: u64,
}

impl ClientDrops {
    pub fn total(&self) -> u64 {
        self.malformed + self.unauthenticated + self.replayed
    }
}

/// Why a connection ended before its stream did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Failure {
    /// No authenticated answer to the handshake within `HANDSHAKE_GIVE_UP`.
    NoAnswer,
    /// Nothing authenticated for the idle timeout.
    Silent(Dur),
    /// The server's stateless reset: it no longer knows the connection.
    Reset,
    /// Too many forged datagrams for the keys to be trusted (`session::FAILED_OPEN_LIMIT`).
    KeysSpent,
    /// The server's stream (this many bytes) is shorter than the offset asked for: the part
    /// being resumed is not of this stream.
    ResumedPastEnd(u64),
}

impl Failure {
    /// One line naming the server's address and what to check.
    pub fn message(&self, server: impl fmt::Display) -> String {
        match self {
            Failure::NoAnswer => format!(
                "no authenticated answer from {server}: is the server running, and is the \
                 secret the same?"
            ),
            Failure::Silent(d) => format!(
                "the server at {server} stopped answering (nothing authenticated for {:.0} s)",
                d.as_secs_f64()
            ),
            Failure::Reset => {
                format!("the server at {server} no longer knows this connection (it restarted?)")
            }
            Failure::ResumedPastEnd(n) => format!(
                "the server at {server} serves {n} bytes, fewer than the part being resumed \
                 holds: is it the same file?"
            ),
            Failure::KeysSpent => format!(
                "too many forged datagrams toward {server}: the connection's keys are spent"
            ),
        }
    }
}

#[derive(Clone, Copy, Debug, Default)]
struct PathState {
    /// A JoinAck came (the receiver knows the path).
    joined: bool,
    /// Data came on it: the server opened the subflow (the Proof arrived).
    confirmed: bool,
    next_try: Option<Time>,
    tries: u32,
    /// The last authenticated datagram on this path, and when to ask again if it stays
    /// silent (a keepalive per path: each path's NAT may move on its own).
    last_heard: Time,
    next_probe: Option<Time>,
    probe_gap: Dur,
}

enum State {
    Handshake(Box<ClientHandshake>),
    Open(Box<Session>),
    Failed(Failure),
}

pub struct Client {
    cfg: ClientConfig,
    psk: Psk,
    state: State,
    started: Time,
    next_try: Option<Time>,
    tries: u32,
    /// The last authenticated datagram (or the start).
    last_heard: Time,
    idle: Dur,
    /// The silence after which a path's keepalive goes (`KEEPALIVE_MIN` to `KEEPALIVE`).
    keepalive: Dur,
    /// When the Initial last left (the handshake's round trip is measured from it).
    initial_sent: Time,
    paths: Vec<PathState>,
    receiver: Option<Receiver>,
    /// The stream's bytes from the datagrams until the application takes them (with the
    /// receiver).
    held: Option<Reassembly>,
    /// Halves of segments split over two datagrams, until their partners come.
    halves: Halves,
    /// Every segment below this is in order (the core's receiver said so).
    delivered: u64,
    total: Option<u64>,
    out: VecDeque<(usize, Vec<u8>)>,
    /// Datagram buffers back from the driver once sent.
    pool: Pool,
    /// A copy of a datagram handed over read-only (`handle`), opened in place.
    scratch: Vec<u8>,
    peer_ts: Time,
    closed: bool,
    pub drops: ClientDrops,
    pub bytes_received: Vec<u64>,
    server_stats: Option<Vec<SubflowStats>>,
}

impl Client {
    pub fn new(psk: &Psk, conn_id: u32, cfg: ClientConfig, now: Time) -> Client {
        assert!((1..=crate::server::MAX_PATHS).contains(&cfg.paths));
        let hello = Hello {
            unix_ns: unix_now_ns(),
            idle_ms: (cfg.idle_timeout.0 / 1_000_000).clamp(1_000, u64::from(u32::MAX)) as u32,
            offset: cfg.offset,
            offer: Offer::local(cfg.aead),
        };
        let hs = ClientHandshake::start(psk, conn_id, &hello);
        let initial = hs.initial().to_vec();
        let n = cfg.paths;
        let idle = cfg.idle_timeout;
        let mut c = Client {
            cfg,
            psk: psk.clone(),
            state: State::Handshake(Box::new(hs)),
            started: now,
            next_try: Some(now + RETRY),
            tries: 0,
            last_heard: now,
            idle,
            keepalive: KEEPALIVE,
            initial_sent: now,
            paths: vec![PathState::default(); n],
            receiver: None,
            held: None,
            halves: Halves::default(),
            delivered: 0,
            total: None,
            out: VecDeque::new(),
            pool: Pool::default(),
            scratch: Vec::with_capacity(MAX_DATAGRAM),
            peer_ts: Time::ZERO,
            closed: false,
            drops: ClientDrops::default(),
            bytes_received: vec![0; n],
            server_stats: None,
        };
        c.out.push_back((0, initial));
        c
    }

    /// Why the connection failed, if it did.
    pub fn failed(&self) -> Option<Failure> {
        match &self.state {
            State::Failed(why) => Some(*why),
            _ => None,
        }
    }

    /// The idle timeout both ends agreed on.
    pub fn idle_timeout(&self) -> Dur {
        self.idle
    }

    /// The whole stream has arrived (a stream of known length).
    pub fn is_complete(&self) -> bool {
        self.total.is_some_and(|t| self.delivered_bytes() >= t)
    }

    /// The server said it is done.
    pub fn is_closed(&self) -> bool {
        self.closed
    }

    pub fn total(&self) -> Option<u64> {
        self.total
    }

    pub fn delivered_bytes(&self) -> u64 {
        let mss = u64::from(wire::mss(true));
        let b = self.delivered * mss;
        self.total.map_or(b, |t| b.min(t))
    }

    pub fn receiver(&self) -> Option<&Receiver> {
        self.receiver.as_ref()
    }

    /// The data segments delivered since the last call, in data order (with `trace` on).
    pub fn take_delivery(&mut self) -> Option<DeliveryTrace> {
        self.receiver
            .as_mut()
            .and_then(|rx| rx.trace.as_mut())
            .map(std::mem::take)
    }

    /// The AEAD suite the handshake chose, once it has.
    pub fn suite(&self) -> Option<Suite> {
        match &self.state {
            State::Open(s) => Some(s.suite()),
            _ => None,
        }
    }

    /// The stream's next bytes, in order, all that have arrived (`None`: none); `read_with`
    /// hands them over without a copy.
    pub fn read(&mut self, now: Time) -> Option<Vec<u8>> {
        let mut out = Vec::new();
        self.read_with(now, usize::MAX, |b| {
            out.extend_from_slice(b);
            Ok(())
        })
        .ok()?;
        (!out.is_empty()).then_some(out)
    }

    /// The application's read at `now`: hands the stream's in-order bytes that arrived to
    /// `sink`, in order, in runs as long as the reassembly ring allows, stopping after the run
    /// that reaches `max` bytes; returns how many it handed over. What is read leaves the
    /// receive buffer, and the window update a read calls for is queued (`poll_transmit`).
    pub fn read_with(
        &mut self,
        now: Time,
        max: usize,
        sink: impl FnMut(&[u8]) -> io::Result<()>,
    ) -> io::Result<usize> {
        let Some(held) = self.held.as_mut() else {
            return Ok(0);
        };
        let read = held.read_with(max, sink)?;
        if let Some(rx) = self.receiver.as_mut() {
            rx.app_read(now, read as u64);
        }
        self.flush_acks();
        Ok(read)
    }

    /// In-order bytes that arrived and wait for the application's `read_with`.
    pub fn unread_bytes(&self) -> u64 {
        self.receiver.as_ref().map_or(0, Receiver::unread_bytes)
    }

    /// A datagram's buffer back once sent, to be reused.
    pub fn recycle(&mut self, buf: Vec<u8>) {
        self.pool.give(buf);
    }

    /// A datagram that arrived on path `path` (copied, then opened in place: `handle_mut`
    /// spares the copy).
    pub fn handle(&mut self, now: Time, path: usize, datagram: &[u8]) {
        let mut d = std::mem::take(&mut self.scratch);
        d.clear();
        d.extend_from_slice(datagram);
        self.handle_mut(now, path, &mut d);
        self.scratch = d;
    }

    /// A datagram that arrived on path `path`, decrypted in place in its buffer.
    pub fn handle_mut(&mut self, now: Time, path: usize, datagram: &mut [u8]) {
        let wire_len = datagram.len();
        let Ok((header, _)) = Header::decode(datagram) else {
            self.drops.malformed += 1;
            return;
        };
        match header.kind {
            Kind::Response => return self.on_response(now, datagram),
            Kind::Cookie => {
                let State::Handshake(hs) = &mut self.state else {
                    self.drops.replayed += 1;
                    return;
                };
                match hs.accept_cookie(&self.psk, datagram) {
                    // The server is under load: the Initial again at once, with the cookie
                    // that proves this address.
                    Ok(()) => {
                        self.out.push_back((0, hs.initial().to_vec()));
                        self.initial_sent = now;
                    }
                    Err(e) => self.count(e),
                }
                return;
            }
            Kind::Reset => {
                let genuine = match &self.state {
                    State::Open(s) => {
                        s.path_of(header.conn_id).is_some()
                            && is_reset(&self.psk, header.conn_id, datagram)
                    }
                    _ => false,
                };
                if genuine && !self.is_complete() && !self.closed {
                    self.state = State::Failed(Failure::Reset);
                } else if !genuine {
                    self.drops.unauthenticated += 1;
                }
                return;
            }
            Kind::Initial => {
                self.drops.malformed += 1;
                return;
            }
            _ => {}
        }
        let State::Open(session) = &mut self.state else {
            self.drops.malformed += 1;
            return;
        };
        let opened = match session.open(&header, datagram) {
            Ok(o) => o,
            Err(e) => {
                match e {
                    OpenError::Wire(_) => self.drops.malformed += 1,
                    OpenError::Auth => self.drops.unauthenticated += 1,
                    OpenError::Replay => self.drops.replayed += 1,
                }
                if session.keys_spent() {
                    self.state = State::Failed(Failure::KeysSpent);
                }
                return;
            }
        };
        let frame = opened.frame;
        if opened.path != path
            || path >= self.paths.len()
            || frame.subflow().is_some_and(|s| usize::from(s) != path)
        {
            // Another path's id on this path's socket: not the server's doing.
            self.drops.malformed += 1;
            return;
        }
        self.last_heard = now;
        let p = &mut self.paths[path];
        p.last_heard = now;
        p.next_probe = None;
        p.probe_gap = self.keepalive;
        self.bytes_received[path] += wire_len as u64;
        match frame {
            Frame::JoinAck {
                size, challenge, ..
            } => {
                if size != u64::MAX && size < self.cfg.offset {
                    // The part being resumed is longer than what is served: another file.
                    self.state = State::Failed(Failure::ResumedPastEnd(size));
                    return;
                }
                if self.receiver.is_none() {
                    // The stream from the offset on.
                    self.total = (size != u64::MAX).then(|| size - self.cfg.offset);
                    self.receiver = Some(Receiver::new(ReceiverConfig {
                        mptcp: true,
                        rcvbuf: Bytes(self.cfg.rcvbuf),
                        rcvbuf_initial: Bytes(mpsched_core::conn::rcvwin::RCVBUF_INITIAL),
                        rcvbuf_autotune: true,
                        window_ratio: None,
                        subflows: self.paths.len(),
                        stack: self.cfg.stack,
                        total: self.total.map(Bytes),
                        jiffies: Jiffies::EXACT,
                        ack_policy: self.cfg.ack_policy,
                        reader: Reader::OnItsOwn,
                        trace: self.cfg.trace,
                    }));
                    // Every path's Join went out with the handshake's answer: each subflow
                    // is in the connection's list (its ratio counts before its data).
                    let rx = self.receiver.as_mut().expect("set");
                    for i in 0..self.paths.len() {
                        rx.subflow_opened(i);
                    }
                    // Room for the window the receiver advertises at most, and the segments
                    // one receive batch may add before the application reads.
                    let mss = wire::mss(true);
                    let window = self.cfg.rcvbuf / u64::from(mss) + 64;
                    self.held = Some(Reassembly::new(mss as usize, window + 1024));
                }
                // This path's subflow is established at this end: its receive buffer starts
                // to follow the connection's (the simulator's at the SYN-ACK).
                // It has no RTT of its own for SACK compression: the receiver's estimate alone.
                if let Some(rx) = self.receiver.as_mut() {
                    rx.subflow_established(path, Dur::ZERO);
                }
                // The Join goes again until data comes on the path (so a lost Proof is sent
                // again too).
                let p = &mut self.paths[path];
                if !p.joined {
                    p.joined = true;
                    p.last_heard = now;
                    p.probe_gap = self.keepalive;
                }
                if challenge == NO_PROOF {
                    // Path 0, proven by the handshake: the server sends data already.
                    return;
                }
                let mut d = self.pool.take();
                session.seal(
                    path,
                    &Frame::Proof {
                        subflow: path as u8,
                        data: challenge,
                    },
                    &mut d,
                );
                self.out.push_back((path, d));
            }
            Frame::Challenge { data, .. } => {
                // The server checks this path's (new) address: the answer goes back from it.
                let mut d = self.pool.take();
                session.seal(
                    path,
                    &Frame::Proof {
                        subflow: path as u8,
                        data,
                    },
                    &mut d,
                );
                self.out.push_back((path, d));
            }
            // The answer to a keepalive: hearing it was the point.
            Frame::Proof { .. } => {}
            Frame::Data {
                part: Part::Whole, ..
            } => self.on_data(now, &frame, wire_len),
            Frame::Data {
                subflow,
                seq,
                part,
                payload,
                ..
            } => {
                // Half a segment: kept until the other half is in.
                if let Some((whole, wire_len)) =
                    self.halves.add((subflow, seq), part, payload, wire_len)
                {
                    let Frame::Data {
                        subflow,
                        gen,
                        probe,
                        seq,
                        dseq,
                        ts_val,
                        ts_ecr,
                        ..
                    } = frame
                    else {
                        unreachable!()
                    };
                    let frame = Frame::Data {
                        subflow,
                        gen,
                        probe,
                        part: Part::Whole,
                        seq,
                        dseq,
                        ts_val,
                        ts_ecr,
                        payload: &whole,
                    };
                    self.on_data(now, &frame, wire_len);
                }
            }
            Frame::Close { .. } => self.closed = true,
            Frame::Stats { count, subflows } => {
                self.server_stats = Some(subflows[..usize::from(count)].to_vec());
            }
            _ => self.drops.malformed += 1,
        }
    }

    /// A whole data segment (`frame`), which came in datagrams of `wire_len` bytes.
    fn on_data(&mut self, now: Time, frame: &Frame, wire_len: usize) {
        let Frame::Data {
            subflow, payload, ..
        } = *frame
        else {
            return;
        };
        let Some(rx) = self.receiver.as_mut() else {
            return;
        };
        let i = usize::from(subflow);
        let p = &mut self.paths[i];
        if !p.confirmed {
            p.confirmed = true;
            p.next_try = None;
        }
        let cx = DataContext {
            rcv_nxt: rx.subflows()[i].rcv_nxt(),
            data_rcv_nxt: rx.data_rcv_nxt(),
            now,
            peer_ts: self.peer_ts,
        };
        let pkt = data_packet(frame, &cx, wire_len as u32).expect("data");
        let Payload::Data(seg) = pkt.payload else {
            unreachable!()
        };
        self.peer_ts = self.peer_ts.max(seg.ts_val);
        // Keep the bytes of a segment the window admits, once.
        let held = self.held.as_mut().expect("created with the receiver");
        held.insert(seg.dseq, payload);
        rx.handle_data(now, &pkt);
        self.delivered = rx.data_rcv_nxt();
        held.set_in_order(self.delivered);
        self.flush_acks();
    }

    /// The server's counters per subflow, once it sent them (`close`).
    pub fn server_stats(&self) -> Option<&[SubflowStats]> {
        self.server_stats.as_deref()
    }

    /// The client is done: tells the server (on the first joined path), which answers with
    /// its counters.
    pub fn close(&mut self) {
        let State::Open(session) = &mut self.state else {
            return;
        };
        let Some(p) = self.paths.iter().position(|p| p.joined) else {
            return;
        };
        let mut d = self.pool.take();
        session.seal(p, &Frame::Close { code: 0 }, &mut d);
        self.out.push_back((p, d));
    }

    fn count(&mut self, e: OpenError) {
        match e {
            OpenError::Wire(_) => self.drops.malformed += 1,
            OpenError::Auth => self.drops.unauthenticated += 1,
            OpenError::Replay => self.drops.replayed += 1,
        }
    }

    /// The server's Response: the connection opens, or the datagram is counted and the
    /// handshake goes on (a forged or stale Response must not end it).
    fn on_response(&mut self, now: Time, datagram: &[u8]) {
        let State::Handshake(hs) = &mut self.state else {
            // A copy, or one that came late: the handshake is over.
            self.drops.replayed += 1;
            return;
        };
        match hs.finish(datagram) {
            Ok((session, welcome)) => {
                self.state = State::Open(Box::new(session));
                self.next_try = None;
                self.idle = self
                    .idle
                    .min(Dur::from_millis(u64::from(welcome.idle_ms)))
                    .max(Dur::from_secs(1));
                self.last_heard = now;
                let rtt = now - self.initial_sent;
                self.keepalive = Dur(rtt.0.saturating_mul(4)).clamp(KEEPALIVE_MIN, KEEPALIVE);
                for i in 0..self.paths.len() {
                    self.join(now, i);
                }
            }
            Err(e) => self.count(e),
        }
    }

    fn join(&mut self, now: Time, i: usize) {
        let State::Open(session) = &mut self.state else {
            return;
        };
        let p = &mut self.paths[i];
        if p.confirmed {
            return;
        }
        p.tries += 1;
        if p.tries > RETRIES + 1 {
            p.next_try = None;
            return;
        }
        p.next_try = Some(now + RETRY * (1u64 << (p.tries - 1).min(6)));
        let mut d = self.pool.take();
        session.seal(
            i,
            &Frame::Join {
                subflow: i as u8,
                gen: 0,
                ts_val: us(now),
            },
            &mut d,
        );
        self.out.push_back((i, d));
    }

    fn flush_acks(&mut self) {
        let (State::Open(session), Some(rx)) = (&mut self.state, self.receiver.as_mut()) else {
            return;
        };
        while let Some(pkt) = rx.poll_transmit() {
            let Payload::Ack(ack) = pkt.payload else {
                continue;
            };
            let mut d = self.pool.take();
            let p = usize::from(pkt.subflow);
            session.seal(p, &ack_frame(&pkt, &ack), &mut d);
            self.out.push_back((p, d));
        }
    }

    pub fn poll_transmit(&mut self) -> Option<(usize, Vec<u8>)> {
        self.out.pop_front()
    }

    pub fn poll_timeout(&self) -> Option<Time> {
        match self.state {
            State::Failed(_) => return None,
            State::Handshake(_) => {
                let give_up = self.started + HANDSHAKE_GIVE_UP;
                return Some(self.next_try.map_or(give_up, |t| t.min(give_up)));
            }
            State::Open(_) => {}
        }
        let rx = self.receiver.as_ref().and_then(Receiver::poll_timeout);
        let joins = self.paths.iter().filter_map(|p| p.next_try).min();
        let keepalive = self
            .paths
            .iter()
            .filter(|p| p.joined)
            .map(|p| p.next_probe.unwrap_or(p.last_heard + self.keepalive))
            .min();
        let idle = self.last_heard + self.idle;
        [rx, joins, keepalive, Some(idle)]
            .into_iter()
            .flatten()
            .min()
    }

    pub fn handle_timeout(&mut self, now: Time) {
        match &self.state {
            State::Failed(_) => return,
            State::Handshake(hs) => {
                if now >= self.started + HANDSHAKE_GIVE_UP {
                    self.state = State::Failed(Failure::NoAnswer);
                    return;
                }
                if self.next_try.is_some_and(|t| t <= now) {
                    self.tries += 1;
                    // 1, 2, 3 s apart: four tries within the 10 s.
                    self.next_try = Some(now + RETRY * u64::from(self.tries + 1));
                    self.out.push_back((0, hs.initial().to_vec()));
                    self.initial_sent = now;
                }
                return;
            }
            State::Open(_) => {}
        }
        if now >= self.last_heard + self.idle && !self.is_complete() && !self.closed {
            self.state = State::Failed(Failure::Silent(self.idle));
            return;
        }
        for p in 0..self.paths.len() {
            let ps = &self.paths[p];
            if ps.joined
                && now >= ps.last_heard + self.keepalive
                && ps.next_probe.is_none_or(|t| t <= now)
            {
                self.keepalive(now, p);
            }
        }
        for i in 0..self.paths.len() {
            if self.paths[i].next_try.is_some_and(|t| t <= now) {
                self.join(now, i);
            }
        }
        if let Some(rx) = self.receiver.as_mut() {
            if rx.poll_timeout().is_some_and(|t| t <= now) {
                rx.handle_timeout(now);
            }
        }
        self.flush_acks();
    }

    /// Silence on path `p`: a challenge, which a live server answers (and which shows it the
    /// path's address if a NAT moved it); a restarted server answers with a reset. Again
    /// after twice the gap while the silence lasts, up to `KEEPALIVE`.
    fn keepalive(&mut self, now: Time, p: usize) {
        let State::Open(session) = &mut self.state else {
            return;
        };
        let ps = &mut self.paths[p];
        ps.next_probe = Some(now + ps.probe_gap);
        ps.probe_gap = Dur(ps.probe_gap.0.saturating_mul(2)).min(KEEPALIVE);
        let mut d = self.pool.take();
        session.seal(
            p,
            &Frame::Challenge {
                subflow: p as u8,
                data: crate::random::u64(),
                pad: 0,
            },
            &mut d,
        );
        self.out.push_back((p, d));
    }

    /// The time a timestamp echoed by the server stands for (unused by the client itself).
    pub fn echo_time(&self, v: u32, now: Time) -> Time {
        from_us(v, now)
    }
}

//! The client, sans-IO: it opens the connection on path 0 (the Noise handshake), then a
//! subflow on every path (Join, JoinAck, and an ACK that echoes the JoinAck from the same
//! address), and runs the core's `Receiver`: ACKs out, the stream's bytes in order.

use crate::aead::{Offer, Suite};
use crate::convert::{ack_frame, data_packet, from_us, us, DataContext};
use crate::pool::Pool;
use crate::reassembly::Reassembly;
use crate::session::{ClientHandshake, OpenError, Psk, Session};
use crate::wire::{Frame, Header, Kind, SubflowStats, MAX_DATAGRAM};
use mpsched_core::conn::{Receiver, ReceiverConfig, Stack};
use mpsched_core::jiffies::Jiffies;
use mpsched_core::packet::{Ack, Packet, Payload, SackBlock, MAX_SACK_BLOCKS};
use mpsched_core::subflow::rx::AckPolicy;
use mpsched_core::trace::DeliveryTrace;
use mpsched_core::units::{wire, Bytes};
use mpsched_core::{Dur, Time};
use std::collections::VecDeque;
use std::io;

/// The handshake's and the Joins' first retransmission timeout (Linux's SYN timeout), doubling.
pub const RETRY: Dur = Dur::from_secs(1);
pub const RETRIES: u32 = 6;

#[derive(Clone, Debug)]
pub struct ClientConfig {
    pub paths: usize,
    pub rcvbuf: u64,
    pub stack: Stack,
    /// Record each data segment's arrival and delivery (`Client::take_delivery`).
    pub trace: bool,
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

#[derive(Clone, Copy, Debug, Default)]
struct PathState {
    joined: bool,
    next_try: Option<Time>,
    tries: u32,
}

enum State {
    Handshake(Box<ClientHandshake>, Vec<u8>),
    Open(Box<Session>),
    Failed(String),
}

pub struct Client {
    cfg: ClientConfig,
    state: State,
    next_try: Option<Time>,
    tries: u32,
    paths: Vec<PathState>,
    receiver: Option<Receiver>,
    /// The stream's bytes from the datagrams until the application takes them (with the
    /// receiver).
    held: Option<Reassembly>,
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
        let (hs, initial) = ClientHandshake::start(psk, conn_id, Offer::local(cfg.aead));
        let n = cfg.paths;
        let mut c = Client {
            cfg,
            state: State::Handshake(Box::new(hs), initial.clone()),
            next_try: Some(now + RETRY),
            tries: 0,
            paths: vec![PathState::default(); n],
            receiver: None,
            held: None,
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
    pub fn failed(&self) -> Option<&str> {
        match &self.state {
            State::Failed(why) => Some(why),
            _ => None,
        }
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
    pub fn read(&mut self) -> Option<Vec<u8>> {
        let mut out = Vec::new();
        self.read_with(|b| {
            out.extend_from_slice(b);
            Ok(())
        })
        .ok()?;
        (!out.is_empty()).then_some(out)
    }

    /// Hands the stream's in-order bytes that arrived to `sink`, in order, in runs as long as
    /// the reassembly ring allows.
    pub fn read_with(&mut self, sink: impl FnMut(&[u8]) -> io::Result<()>) -> io::Result<()> {
        match self.held.as_mut() {
            Some(held) => held.read_with(sink),
            None => Ok(()),
        }
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
        if header.kind == Kind::Response {
            if let State::Handshake(..) = self.state {
                let State::Handshake(hs, _) =
                    std::mem::replace(&mut self.state, State::Failed(String::new()))
                else {
                    unreachable!()
                };
                match hs.finish(datagram) {
                    Ok(s) => {
                        self.state = State::Open(Box::new(s));
                        self.next_try = None;
                        for i in 0..self.paths.len() {
                            self.join(now, i);
                        }
                    }
                    Err(e) => {
                        self.count(e);
                        self.state = State::Failed(format!("handshake: {e}"));
                    }
                }
            }
            return;
        }
        let State::Open(session) = &mut self.state else {
            self.drops.malformed += 1;
            return;
        };
        let frame = match session.open(&header, datagram) {
            Ok(f) => f,
            Err(e) => {
                match e {
                    OpenError::Wire(_) => self.drops.malformed += 1,
                    OpenError::Auth => self.drops.unauthenticated += 1,
                    OpenError::Replay => self.drops.replayed += 1,
                }
                return;
            }
        };
        if path < self.bytes_received.len() {
            self.bytes_received[path] += wire_len as u64;
        }
        match frame {
            Frame::JoinAck {
                subflow,
                ts_val,
                size,
                ..
            } if usize::from(subflow) == path && path < self.paths.len() => {
                if self.receiver.is_none() {
                    self.total = (size != u64::MAX).then_some(size);
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
                        trace: self.cfg.trace,
                    }));
                    // Room for the window the receiver advertises at most, and the segments
                    // one receive batch may add before the application reads.
                    let mss = wire::mss(true);
                    let window = self.cfg.rcvbuf / u64::from(mss) + 64;
                    self.held = Some(Reassembly::new(mss as usize, window + 1024));
                }
                let p = &mut self.paths[path];
                p.joined = true;
                p.next_try = None;
                // The ACK that confirms the subflow echoes the server's timestamp.
                let rx = self.receiver.as_ref().expect("created");
                let ack = Ack {
                    ack: rx.subflows()[path].rcv_nxt(),
                    sack: [SackBlock { start: 0, end: 0 }; MAX_SACK_BLOCKS],
                    sack_len: 0,
                    data_ack: rx.data_rcv_nxt(),
                    rwnd: rx.rwnd(),
                    ts_val: now,
                    ts_ecr: Time::ZERO,
                    dsack: false,
                };
                let pkt = Packet {
                    subflow: path as u8,
                    gen: 0,
                    wire_len: 0,
                    payload: Payload::Ack(ack),
                };
                let mut f = ack_frame(&pkt, &ack);
                if let Frame::Ack { ts_ecr, .. } = &mut f {
                    *ts_ecr = ts_val;
                }
                let mut d = self.pool.take();
                session.seal(&f, &mut d);
                self.out.push_back((path, d));
            }
            Frame::Data {
                subflow, payload, ..
            } if usize::from(subflow) < self.paths.len() => {
                let Some(rx) = self.receiver.as_mut() else {
                    return;
                };
                let i = usize::from(subflow);
                let cx = DataContext {
                    rcv_nxt: rx.subflows()[i].rcv_nxt(),
                    data_rcv_nxt: rx.data_rcv_nxt(),
                    now,
                    peer_ts: self.peer_ts,
                };
                let pkt = data_packet(&frame, &cx, wire_len as u32).expect("data");
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
            Frame::Close { .. } => self.closed = true,
            Frame::Stats { count, subflows } => {
                self.server_stats = Some(subflows[..usize::from(count)].to_vec());
            }
            _ => self.drops.malformed += 1,
        }
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
        session.seal(&Frame::Close { code: 0 }, &mut d);
        self.out.push_back((p, d));
    }

    fn count(&mut self, e: OpenError) {
        match e {
            OpenError::Wire(_) => self.drops.malformed += 1,
            OpenError::Auth => self.drops.unauthenticated += 1,
            OpenError::Replay => self.drops.replayed += 1,
        }
    }

    fn join(&mut self, now: Time, i: usize) {
        let State::Open(session) = &mut self.state else {
            return;
        };
        let p = &mut self.paths[i];
        if p.joined {
            return;
        }
        p.tries += 1;
        if p.tries > RETRIES + 1 {
            p.next_try = None;
            return;
        }
        p.next_try = Some(now + RETRY * (1u64 << (p.tries - 1)));
        let mut d = self.pool.take();
        session.seal(
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
            session.seal(&ack_frame(&pkt, &ack), &mut d);
            self.out.push_back((usize::from(pkt.subflow), d));
        }
    }

    pub fn poll_transmit(&mut self) -> Option<(usize, Vec<u8>)> {
        self.out.pop_front()
    }

    pub fn poll_timeout(&self) -> Option<Time> {
        let rx = self.receiver.as_ref().and_then(Receiver::poll_timeout);
        let joins = self.paths.iter().filter_map(|p| p.next_try).min();
        [rx, joins, self.next_try].into_iter().flatten().min()
    }

    pub fn handle_timeout(&mut self, now: Time) {
        if let State::Handshake(_, initial) = &self.state {
            if self.next_try.is_some_and(|t| t <= now) {
                self.tries += 1;
                if self.tries > RETRIES {
                    self.next_try = None;
                    self.state = State::Failed("no answer from the server".into());
                    return;
                }
                self.next_try = Some(now + RETRY * (1u64 << self.tries));
                self.out.push_back((0, initial.clone()));
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

    /// The time a timestamp echoed by the server stands for (unused by the client itself).
    pub fn echo_time(&self, v: u32, now: Time) -> Time {
        from_us(v, now)
    }
}

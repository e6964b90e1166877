//! One direction of a path: random loss (independent or bursty, `loss`), a FIFO drop-tail queue, a serializer at the
//! bottleneck rate, then a propagation delay line, optionally with a per-packet delay variation
//! (netem's `delay D J distribution normal`). By default it never reorders: a packet drawn to
//! arrive before the one ahead of it waits for it, as behind netem with a rate or a FIFO after
//! it. With `reorder` each packet keeps its own draw, so a later packet may overtake an earlier
//! one (netem's `delay D J` without a rate); serialization stays in FIFO order.
//!
//! Sans-IO: `enqueue` takes a packet, `poll_at` tells when the next packet leaves the delay
//! line, `poll_deliver` hands it over. Internally only the head of each stage matters, so a
//! driver needs to keep just one pending event per link (the htsim pattern).
//!
//! The link is generic over what it carries: the simulator's modelled [`Packet`]s (the
//! default), or raw IP packets in the real-time emulator (`mpsched-emu`), so that one
//! description of a path means the same thing in both. All it needs of a packet is its size on
//! the wire ([`HasWireLen`]).

use crate::codel::{Codel, CodelConfig};
use crate::fq_codel::FqCodel;
use crate::loss::{Loss, LossModel};
use crate::opportunities::{Opportunities, OpportunityServer};
use crate::packet::Packet;
use crate::rng::Rng;
use crate::time::{Dur, Time};
use crate::units::{wire::MTU, Rate};
use std::collections::VecDeque;

/// How the drop-tail limit of a queue is expressed.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum QueueLimit {
    Bytes(u64),
    Packets(u64),
    /// A time at the link rate; converted to bytes, again whenever the rate changes.
    Time(Dur),
}

#[derive(Clone, Debug)]
pub struct LinkConfig {
    pub rate: Rate,
    pub delay: Dur,
    pub queue: QueueLimit,
    pub loss: LossModel,
    /// Standard deviation of each packet's propagation delay (normal, cut at 4 sigma and at
    /// zero delay); zero: a fixed delay.
    pub jitter: Dur,
    /// A Mahimahi trace of delivery opportunities instead of a fixed rate (`rate` is then the
    /// trace's mean, for queue limits in time).
    pub opportunities: Option<Opportunities>,
    /// CoDel (RFC 8289) at the queue's head, besides the drop-tail limit.
    pub codel: Option<CodelConfig>,
    /// FQ-CoDel (RFC 8290) instead: a CoDel queue per flow, served by deficit round robin.
    pub fq_codel: Option<CodelConfig>,
    /// Each packet arrives after its own propagation delay, even before a packet sent ahead of
    /// it (netem's `delay D J` without a rate: the jitter reorders).
    pub reorder: bool,
}

impl LinkConfig {
    /// A drop-tail link of `rate` and one-way `delay` that loses nothing, with no jitter, no
    /// trace and no AQM: the rest is set with `LinkConfig { knob, ..LinkConfig::new(..) }`, so
    /// a knob added later touches this and no caller.
    pub fn new(rate: Rate, delay: Dur, queue: QueueLimit) -> LinkConfig {
        LinkConfig {
            rate,
            delay,
            queue,
            loss: LossModel::Bernoulli(0.0),
            jitter: Dur::ZERO,
            opportunities: None,
            codel: None,
            fq_codel: None,
            reorder: false,
        }
    }
}

/// A normal deviate beyond this many standard deviations is cut (netem's tables end there).
const JITTER_SIGMAS: f64 = 4.0;

#[derive(Clone, Copy, Debug, Default)]
pub struct LinkStats {
    pub enqueued: u64,
    pub queue_drops: u64,
    pub random_drops: u64,
    /// Packets lost to an outage: in the link when it went down, or offered while down.
    pub outage_drops: u64,
    /// Packets CoDel dropped at the head of the queue.
    pub aqm_drops: u64,
    pub delivered: u64,
    pub bytes_delivered: u64,
}

/// Why `enqueue` did not accept a packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Drop {
    Random,
    QueueFull,
    /// The link is down.
    Outage,
}

/// What a link needs to know about what it carries: the bytes it occupies on the wire
/// (headers included), which the serializer charges at the link rate and the byte limits count.
pub trait HasWireLen {
    fn wire_len(&self) -> u32;
    /// The flow it belongs to, for flow queueing (FQ-CoDel): its 5-tuple, or what stands for it.
    fn flow_key(&self) -> u64 {
        0
    }
}

impl HasWireLen for Packet {
    fn wire_len(&self) -> u32 {
        self.wire_len
    }
    fn flow_key(&self) -> u64 {
        u64::from(self.subflow)
    }
}

pub struct Link<P: HasWireLen = Packet> {
    rate: Rate,
    delay: Dur,
    jitter: Dur,
    /// The shortest propagation delay a packet may draw (`delay` without jitter).
    min_delay: Dur,
    /// A packet may overtake those ahead of it in the delay line.
    reorder: bool,
    limit: QueueLimit,
    loss: Loss,
    rng: Rng,
    /// Every packet in the link: first those propagating (the delay line, with their arrival
    /// times, non-decreasing: in arrival order, which is the sending order unless `reorder`),
    /// from index `in_pipe` on those waiting or in service, in order. One deque, so that a packet is not moved from the queue
    /// to the delay line.
    packets: VecDeque<(Time, P)>,
    in_pipe: usize,
    queued_bytes: u64,
    /// When the first queued packet finishes serialization (meaningful if any is queued).
    head_done: Time,
    stats: LinkStats,
    /// Serialization times of the last two wire lengths seen, at the current rate.
    tx_cache: [(u32, Dur); 2],
    /// The byte limit at the current rate (`None`: a packet limit).
    limit_bytes: Option<u64>,
    /// False during an outage (`set_up`).
    up: bool,
    /// Departures at a trace's delivery opportunities instead of at the rate.
    server: Option<Box<OpportunityServer>>,
    codel: Option<Box<Codel>>,
    /// With FQ-CoDel the waiting packets are here, by flow; `packets` holds the pipe and the
    /// one packet in service.
    fq: Option<Box<FqCodel<P>>>,
    /// Packets the AQM dropped, for the driver to take (`take_dropped`).
    dropped: Vec<P>,
}

impl<P: HasWireLen> Link<P> {
    pub fn new(cfg: &LinkConfig, rng: Rng) -> Link<P> {
        assert!(cfg.rate.bps > 0, "link rate must be positive");
        let rate = cfg
            .opportunities
            .as_ref()
            .map_or(cfg.rate, Opportunities::mean_rate);
        Link {
            rate,
            delay: cfg.delay,
            jitter: cfg.jitter,
            min_delay: Self::min_propagation(cfg.delay, cfg.jitter),
            reorder: cfg.reorder,
            limit: cfg.queue,
            loss: Loss::new(cfg.loss),
            rng,
            packets: VecDeque::new(),
            in_pipe: 0,
            queued_bytes: 0,
            head_done: Time::ZERO,
            stats: LinkStats::default(),
            tx_cache: [(0, Dur::ZERO); 2],
            limit_bytes: Self::bytes_of(cfg.queue, rate),
            up: true,
            server: cfg
                .opportunities
                .clone()
                .map(|o| Box::new(OpportunityServer::new(o))),
            codel: cfg
                .codel
                .filter(|_| cfg.fq_codel.is_none())
                .map(|c| Box::new(Codel::new(c))),
            fq: cfg.fq_codel.map(|c| Box::new(FqCodel::new(c))),
            dropped: Vec::new(),
        }
    }

    pub fn stats(&self) -> &LinkStats {
        &self.stats
    }
    pub fn rate(&self) -> Rate {
        self.rate
    }
    pub fn delay(&self) -> Dur {
        self.delay
    }
    /// Bytes waiting in the queue, the one being serialized included.
    pub fn backlog_bytes(&self) -> u64 {
        self.queued_bytes
    }

    fn bytes_of(limit: QueueLimit, rate: Rate) -> Option<u64> {
        match limit {
            QueueLimit::Bytes(b) => Some(b),
            QueueLimit::Packets(_) => None,
            QueueLimit::Time(d) => Some(rate.bytes_in(d)),
        }
    }

    /// Offers a packet to the link at `now`. Loss is drawn first (as netem does at enqueue),
    /// then the drop-tail limit is checked against the backlog (a bfifo/pfifo qdisc's test:
    /// the packet in service counts, as it is still in the device queue).
    pub fn enqueue(&mut self, now: Time, pkt: P) -> Result<(), Drop> {
        self.advance(now);
        if !self.up {
            self.stats.outage_drops += 1;
            return Err(Drop::Outage);
        }
        if self.loss.lose(&mut self.rng) {
            self.stats.random_drops += 1;
            return Err(Drop::Random);
        }
        let fits = match self.limit {
            QueueLimit::Packets(n) => (self.queued() as u64) < n.max(1),
            _ => {
                // A queue always admits a packet when it is empty, whatever its byte limit,
                // so that a limit below one MTU means "no buffering" rather than "no link".
                self.queued() == 0
                    || self.queued_bytes + pkt.wire_len() as u64 <= self.limit_bytes.unwrap_or(0)
            }
        };
        if !fits {
            self.stats.queue_drops += 1;
            return Err(Drop::QueueFull);
        }
        self.stats.enqueued += 1;
        if self.fq.is_some() && self.packets.len() > self.in_pipe {
            self.fq_enqueue(now, pkt);
            return Ok(());
        }
        if self.queued() == 0 {
            self.head_done = self.departure(now, pkt.wire_len());
        }
        self.queued_bytes += pkt.wire_len() as u64;
        // A queued packet's slot holds when it was queued (its arrival time once it leaves).
        self.packets.push_back((now, pkt));
        Ok(())
    }

    /// Packets waiting or in service.
    #[inline]
    fn queued(&self) -> usize {
        self.packets.len() - self.in_pipe + self.fq.as_ref().map_or(0, |f| f.len())
    }

    fn tx_time(&mut self, len: u32) -> Dur {
        if let Some(&(_, d)) = self.tx_cache.iter().find(|(l, _)| *l == len) {
            return d;
        }
        let d = self.rate.tx_time(len as u64);
        self.tx_cache = [(len, d), self.tx_cache[0]];
        d
    }

    /// Moves every packet whose serialization has finished by `now` into the delay line.
    /// The test is inline: most calls find nothing finished (a delivery's look for a second
    /// packet, an enqueue behind a packet still in service).
    #[inline]
    fn advance(&mut self, now: Time) {
        if self.in_pipe < self.packets.len() && self.head_done <= now {
            self.advance_finished(now);
        }
    }

    #[inline(never)]
    fn advance_finished(&mut self, now: Time) {
        while self.in_pipe < self.packets.len() && self.head_done <= now {
            let done = self.head_done;
            let last = match self.in_pipe {
                0 => Time::ZERO,
                i => self.packets[i - 1].0,
            };
            let delay = self.propagation();
            let (arrival, pkt) = &mut self.packets[self.in_pipe];
            if self.reorder {
                *arrival = done + delay;
            } else {
                *arrival = (done + delay).max(last);
            }
            self.queued_bytes -= pkt.wire_len() as u64;
            if self.reorder {
                self.sort_into_pipe(self.in_pipe);
            }
            self.in_pipe += 1;
            self.aqm_at_head(done);
            self.fq_next(done);
            if let Some((_, next)) = self.packets.get(self.in_pipe) {
                let len = next.wire_len();
                self.head_done = self.departure(done, len);
            }
        }
    }

    /// The packet at `i`, just out of the serializer, moves ahead of those in the delay line
    /// that arrive after it (they are few: those within the jitter's spread), so the line
    /// stays in arrival order and its front is the next to arrive. Equal arrivals keep their
    /// sending order.
    #[inline(never)]
    fn sort_into_pipe(&mut self, mut i: usize) {
        let arrival = self.packets[i].0;
        while i > 0 && self.packets[i - 1].0 > arrival {
            self.packets.swap(i - 1, i);
            i -= 1;
        }
    }

    /// The next queued packet leaves the queue for the wire at `now`: CoDel may drop it, and
    /// then judges the one behind it, at the same instant (RFC 8289 `dequeue`).
    #[inline]
    fn aqm_at_head(&mut self, now: Time) {
        let Some(codel) = self.codel.as_mut() else {
            return;
        };
        loop {
            let Some(&(queued_at, ref next)) = self.packets.get(self.in_pipe) else {
                codel.on_empty();
                return;
            };
            let len = u64::from(next.wire_len());
            let sojourn = now.saturating_since(queued_at);
            if !codel.should_drop(now, sojourn, self.queued_bytes - len, u64::from(MTU)) {
                return;
            }
            let (_, pkt) = self.packets.remove(self.in_pipe).expect("present");
            self.queued_bytes -= len;
            self.stats.aqm_drops += 1;
            self.dropped.push(pkt);
        }
    }

    /// A packet joins its flow's queue behind the one in service (FQ-CoDel).
    #[inline(never)]
    fn fq_enqueue(&mut self, now: Time, pkt: P) {
        self.queued_bytes += pkt.wire_len() as u64;
        let fq = self.fq.as_mut().expect("FQ-CoDel");
        fq.enqueue(now, pkt.flow_key(), pkt.wire_len(), pkt);
    }

    /// FQ-CoDel picks the packet to serve next, at `now` (RFC 8290 dequeue).
    #[inline]
    fn fq_next(&mut self, now: Time) {
        let Some(fq) = self.fq.as_mut() else {
            return;
        };
        let before = self.dropped.len();
        let next = fq.dequeue(now, |p| p.wire_len(), u64::from(MTU), &mut self.dropped);
        for p in &self.dropped[before..] {
            self.queued_bytes -= u64::from(p.wire_len());
            self.stats.aqm_drops += 1;
        }
        if let Some(p) = next {
            self.packets.push_back(p);
        }
    }

    /// Packets the AQM dropped since the last call (the driver counts them).
    pub fn take_dropped(&mut self) -> Vec<P> {
        std::mem::take(&mut self.dropped)
    }

    /// When a packet of `len` bytes at the head of the queue from `ready` on has been sent:
    /// serialized at the rate, or carried by the trace's delivery opportunities.
    #[inline]
    fn departure(&mut self, ready: Time, len: u32) -> Time {
        match self.server.as_mut() {
            Some(s) => s.depart(ready, len),
            None => ready + self.tx_time(len),
        }
    }

    /// The propagation delay of the packet leaving the serializer now.
    fn propagation(&mut self) -> Dur {
        if self.jitter == Dur::ZERO {
            return self.delay;
        }
        let z = self.rng.normal().clamp(-JITTER_SIGMAS, JITTER_SIGMAS);
        let d = self.delay.0 as f64 + z * self.jitter.0 as f64;
        Dur(d.max(0.0).round() as u64)
    }

    /// The shortest propagation delay a packet may draw.
    fn min_propagation(delay: Dur, jitter: Dur) -> Dur {
        let spread = (jitter.0 as f64 * JITTER_SIGMAS) as u64;
        Dur(delay.0.saturating_sub(spread))
    }

    /// When this link next needs the driver: the next arrival at the far end, or the earliest
    /// a packet still being serialized could arrive (which feeds the delay line).
    pub fn poll_at(&self) -> Option<Time> {
        // A packet in the `packets` deque beyond the pipe is in service, and FQ-CoDel's
        // queues are looked at only without one.
        let serial = (self.packets.len() > self.in_pipe || self.queued() > 0)
            .then(|| self.head_done + self.min_delay);
        match self.packets.front() {
            Some(&(a, _)) if self.in_pipe > 0 => Some(serial.map_or(a, |s| a.min(s))),
            _ => serial,
        }
    }

    /// The next packet that has reached the far end by `now`, if any.
    pub fn poll_deliver(&mut self, now: Time) -> Option<P> {
        self.peek_deliver(now)?;
        Some(self.pop_delivered())
    }

    /// The next packet that has reached the far end by `now`, if any, left in the link so
    /// that a driver can read it in place (a packet is large: moving it out costs more than
    /// reading it); `pop_delivered` then takes it.
    #[inline]
    pub fn peek_deliver(&mut self, now: Time) -> Option<&P> {
        self.advance(now);
        if self.in_pipe == 0 {
            return None;
        }
        match self.packets.front() {
            Some((t, pkt)) if *t <= now => Some(pkt),
            _ => None,
        }
    }

    /// Takes the packet `peek_deliver` just showed.
    #[inline]
    pub fn pop_delivered(&mut self) -> P {
        debug_assert!(self.in_pipe > 0, "no packet was delivered");
        let (_, pkt) = self.packets.pop_front().expect("a delivered packet");
        self.in_pipe -= 1;
        self.stats.delivered += 1;
        self.stats.bytes_delivered += pkt.wire_len() as u64;
        pkt
    }

    /// Changes the rate from `now` on; the packet in service finishes at the old rate.
    pub fn set_rate(&mut self, now: Time, rate: Rate) {
        assert!(rate.bps > 0, "link rate must be positive");
        if self.server.is_some() {
            return; // a trace sets the capacity (the scenario refuses rate changes there)
        }
        self.advance(now);
        self.rate = rate;
        self.tx_cache = [(0, Dur::ZERO); 2];
        self.limit_bytes = Self::bytes_of(self.limit, rate);
    }

    /// Changes the propagation delay of packets that leave the serializer from `now` on.
    /// Packets never overtake each other unless `reorder`: a shorter delay waits behind
    /// earlier packets.
    pub fn set_delay(&mut self, now: Time, delay: Dur) {
        self.advance(now);
        self.delay = delay;
        self.min_delay = Self::min_propagation(delay, self.jitter);
    }

    /// Takes the link down (`up` false) or brings it back at `now`. Down, it loses what it
    /// holds, queued or on the wire (a radio out of range, a cable pulled), and every packet
    /// offered until it is up again; the loss process does not see those packets. Returns
    /// the packets lost in the link, for the driver to count.
    pub fn set_up(&mut self, now: Time, up: bool) -> Vec<P> {
        self.advance(now);
        self.up = up;
        if up {
            return Vec::new();
        }
        self.in_pipe = 0;
        self.queued_bytes = 0;
        let mut lost: Vec<P> = self.packets.drain(..).map(|(_, p)| p).collect();
        if let Some(fq) = self.fq.as_mut() {
            lost.extend(fq.drain());
        }
        self.stats.outage_drops += lost.len() as u64;
        lost
    }

    pub fn is_up(&self) -> bool {
        self.up
    }

    /// Changes the delay variation from `now` on, as `set_delay` the delay.
    pub fn set_jitter(&mut self, now: Time, jitter: Dur) {
        self.advance(now);
        self.jitter = jitter;
        self.min_delay = Self::min_propagation(self.delay, jitter);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::packet::{DataSeg, Packet, Payload};

    fn pkt(seq: u64, len: u32) -> Packet {
        Packet::data(
            0,
            DataSeg {
                seq,
                dseq: seq,
                len,
                ts_val: Time::ZERO,
                ts_ecr: Time::ZERO,
                probe: false,
            },
            false,
        )
    }

    fn link(queue: QueueLimit, loss: f64) -> Link {
        Link::new(
            &LinkConfig {
                loss: LossModel::Bernoulli(loss),
                ..LinkConfig::new(Rate::mbps(30), Dur::from_millis(10), queue)
            },
            Rng::new(1, 1),
        )
    }

    fn drain(l: &mut Link) -> Vec<(Time, u64)> {
        let mut out = vec![];
        while let Some(t) = l.poll_at() {
            while let Some(p) = l.poll_deliver(t) {
                if let crate::packet::Payload::Data(d) = p.payload {
                    out.push((t, d.seq));
                }
            }
        }
        out
    }

    #[test]
    fn serialization_then_propagation() {
        let mut l = link(QueueLimit::Packets(100), 0.0);
        for i in 0..3 {
            l.enqueue(Time::ZERO, pkt(i, 1448)).unwrap();
        }
        let got = drain(&mut l);
        // 1500 B at 30 Mbit/s = 400 us each, then 10 ms.
        let want: Vec<_> = (0..3u64)
            .map(|i| (Time((i + 1) * 400_000 + 10_000_000), i))
            .collect();
        assert_eq!(got, want);
    }

    #[test]
    fn drop_tail_in_packets_and_bytes_and_time() {
        let mut l = link(QueueLimit::Packets(2), 0.0);
        assert!(l.enqueue(Time::ZERO, pkt(0, 1448)).is_ok());
        assert!(l.enqueue(Time::ZERO, pkt(1, 1448)).is_ok());
        assert_eq!(l.enqueue(Time::ZERO, pkt(2, 1448)), Err(Drop::QueueFull));
        let mut l = link(QueueLimit::Bytes(3000), 0.0);
        assert!(l.enqueue(Time::ZERO, pkt(0, 1448)).is_ok());
        assert!(l.enqueue(Time::ZERO, pkt(1, 1448)).is_ok());
        assert_eq!(l.enqueue(Time::ZERO, pkt(2, 1448)), Err(Drop::QueueFull));
        // 1 ms at 30 Mbit/s = 3750 B: two full packets fit, a third does not.
        let mut l = link(QueueLimit::Time(Dur::from_millis(1)), 0.0);
        assert!(l.enqueue(Time::ZERO, pkt(0, 1448)).is_ok());
        assert!(l.enqueue(Time::ZERO, pkt(1, 1448)).is_ok());
        assert_eq!(l.enqueue(Time::ZERO, pkt(2, 1448)), Err(Drop::QueueFull));
        // Once the head has left, there is room again.
        assert!(l.enqueue(Time(400_000), pkt(3, 1448)).is_ok());
        assert_eq!(l.stats().queue_drops, 1);
    }

    #[test]
    fn throughput_equals_rate() {
        let mut l = link(QueueLimit::Packets(1_000_000), 0.0);
        for i in 0..10_000 {
            l.enqueue(Time::ZERO, pkt(i, 1448)).unwrap();
        }
        let got = drain(&mut l);
        let last = got.last().unwrap().0;
        // 10,000 x 1500 B x 8 / 30 Mbit/s = 4 s, plus 10 ms propagation.
        assert_eq!(last, Time(4_000_000_000 + 10_000_000));
    }

    #[test]
    fn random_loss_rate() {
        let mut l = link(QueueLimit::Packets(u64::MAX), 0.05);
        let n = 100_000;
        for i in 0..n {
            let _ = l.enqueue(Time(i * 400_000), pkt(i, 1448));
        }
        let p = l.stats().random_drops as f64 / n as f64;
        assert!((p - 0.05).abs() < 0.003, "{p}");
    }

    #[test]
    fn delay_change_does_not_reorder() {
        let mut l = link(QueueLimit::Packets(100), 0.0);
        l.enqueue(Time::ZERO, pkt(0, 1448)).unwrap();
        l.set_delay(Time(400_000), Dur::from_millis(1));
        l.enqueue(Time(400_000), pkt(1, 1448)).unwrap();
        let got = drain(&mut l);
        assert_eq!(got[0], (Time(10_400_000), 0));
        // Would arrive at 1.8 ms, but waits behind packet 0.
        assert_eq!(got[1], (Time(10_400_000), 1));
    }

    #[test]
    fn any_payload_with_a_wire_length_sees_the_same_link() {
        // A raw packet of the same wire size as a full modelled segment.
        struct Raw(u32);
        impl HasWireLen for Raw {
            fn wire_len(&self) -> u32 {
                self.0
            }
        }
        let cfg = LinkConfig {
            loss: LossModel::Bernoulli(0.1),
            ..LinkConfig::new(
                Rate::mbps(30),
                Dur::from_millis(10),
                QueueLimit::Bytes(4000),
            )
        };
        let mut modelled: Link = Link::new(&cfg, Rng::new(7, 3));
        let mut raw: Link<Raw> = Link::new(&cfg, Rng::new(7, 3));
        let mut got = (vec![], vec![]);
        for i in 0..2000u64 {
            let now = Time(i * 150_000);
            let a = modelled.enqueue(now, pkt(i, 1448));
            let b = raw.enqueue(now, Raw(1500));
            assert_eq!(a, b);
            while let Some(p) = modelled.poll_deliver(now) {
                got.0.push((now, p.wire_len));
            }
            while let Some(p) = raw.poll_deliver(now) {
                got.1.push((now, p.0));
            }
            assert_eq!(modelled.poll_at(), raw.poll_at());
        }
        assert_eq!(got.0, got.1);
        assert!(modelled.stats().queue_drops > 0 && modelled.stats().random_drops > 0);
    }

    fn jitter_config(jitter: Dur) -> LinkConfig {
        LinkConfig {
            jitter,
            ..LinkConfig::new(
                Rate::mbps(30),
                Dur::from_millis(10),
                QueueLimit::Packets(1_000_000),
            )
        }
    }

    fn jitter_link(jitter: Dur) -> Link {
        Link::new(&jitter_config(jitter), Rng::new(1, 1))
    }

    #[test]
    fn jitter_spreads_sparse_packets_normally_around_the_delay() {
        // One packet every 50 ms, far apart for a 2 ms spread: each delay is its own draw.
        let mut l = jitter_link(Dur::from_millis(2));
        let n = 20_000u64;
        let mut delays = Vec::new();
        for i in 0..n {
            let sent = Time(i * 50_000_000);
            l.enqueue(sent, pkt(i, 1448)).unwrap();
            for (t, seq) in drain(&mut l) {
                assert_eq!(seq, i);
                // After the 400 us of serialization.
                delays.push((t - sent).as_secs_f64() * 1e3 - 0.4);
            }
        }
        let mean = delays.iter().sum::<f64>() / n as f64;
        let var = delays.iter().map(|d| (d - mean).powi(2)).sum::<f64>() / n as f64;
        assert!((mean - 10.0).abs() < 0.05, "mean {mean} ms");
        assert!((var.sqrt() - 2.0).abs() < 0.05, "stddev {} ms", var.sqrt());
        let min = delays.iter().cloned().fold(f64::MAX, f64::min);
        assert!(min >= 10.0 - 8.0 - 1e-9, "min {min} ms");
    }

    #[test]
    fn jitter_never_reorders_a_busy_link() {
        // Back to back at the link rate, 400 us apart, with a 5 ms spread: a packet drawn to
        // arrive before the one ahead of it waits for it.
        let mut l = jitter_link(Dur::from_millis(5));
        for i in 0..5_000 {
            l.enqueue(Time::ZERO, pkt(i, 1448)).unwrap();
        }
        let got = drain(&mut l);
        assert_eq!(got.len(), 5_000);
        assert!(got.windows(2).all(|w| w[0].0 <= w[1].0 && w[0].1 < w[1].1));
        // Waiting behind earlier draws only adds delay: the mean exceeds 10 ms.
        let mean = got
            .iter()
            .map(|&(t, seq)| (t - Time((seq + 1) * 400_000)).as_secs_f64() * 1e3)
            .sum::<f64>()
            / got.len() as f64;
        assert!(mean > 10.0 + 2.0, "mean {mean} ms");
    }

    fn reordering_link(jitter: Dur) -> Link {
        Link::new(
            &LinkConfig {
                reorder: true,
                ..jitter_config(jitter)
            },
            Rng::new(1, 1),
        )
    }

    /// The standard normal CDF (Abramowitz and Stegun 7.1.26 for erf, error below 1.5e-7).
    fn phi(x: f64) -> f64 {
        let z = x.abs() / std::f64::consts::SQRT_2;
        let t = 1.0 / (1.0 + 0.327_591_1 * z);
        let poly = t
            * (0.254_829_592
                + t * (-0.284_496_736
                    + t * (1.421_413_741 + t * (-1.453_152_027 + t * 1.061_405_429))));
        let erf = 1.0 - poly * (-z * z).exp();
        if x >= 0.0 {
            0.5 * (1.0 + erf)
        } else {
            0.5 * (1.0 - erf)
        }
    }

    #[test]
    fn reordering_jitter_overtakes_as_often_as_two_independent_normals_say() {
        // Pairs of back-to-back packets, the pairs 50 ms apart: within a pair the second
        // leaves the serializer 400 us after the first, and overtakes it when
        // D2 + 400 us < D1, for D1, D2 independent N(10 ms, sigma):
        // P = Phi(-gap / (sigma sqrt 2)).
        let gap = 0.4;
        for sigma_ms in [0.2, 0.4, 1.0] {
            let mut l = reordering_link(Dur::from_micros((sigma_ms * 1000.0) as u64));
            let n = 20_000u64;
            let mut overtaken = 0u64;
            for i in 0..n {
                let sent = Time(i * 50_000_000);
                l.enqueue(sent, pkt(2 * i, 1448)).unwrap();
                l.enqueue(sent, pkt(2 * i + 1, 1448)).unwrap();
                let got = drain(&mut l);
                assert_eq!(got.len(), 2);
                overtaken += u64::from(got[0].1 > got[1].1);
            }
            let p = phi(-gap / (sigma_ms * std::f64::consts::SQRT_2));
            let measured = overtaken as f64 / n as f64;
            // Four standard errors of a proportion over n pairs.
            let tol = 4.0 * (p * (1.0 - p) / n as f64).sqrt();
            assert!(
                (measured - p).abs() < tol,
                "sigma {sigma_ms} ms: {measured} overtaken, closed form {p} +- {tol}"
            );
        }
    }

    #[test]
    fn reordering_jitter_keeps_each_packets_own_delay_on_a_busy_link() {
        // The busy link of `jitter_never_reorders_a_busy_link`, reordering: many packets
        // overtake, yet each arrives after exactly its own draw, so the mean delay stays at
        // 10 ms instead of growing behind the slowest draws.
        let mut l = reordering_link(Dur::from_millis(5));
        for i in 0..5_000 {
            l.enqueue(Time::ZERO, pkt(i, 1448)).unwrap();
        }
        let got = drain(&mut l);
        assert_eq!(got.len(), 5_000);
        let mut seqs: Vec<u64> = got.iter().map(|g| g.1).collect();
        assert!(
            got.windows(2).all(|w| w[0].0 <= w[1].0),
            "delivered in arrival order"
        );
        let inversions = got.windows(2).filter(|w| w[0].1 > w[1].1).count();
        assert!(inversions > 1_000, "{inversions} adjacent inversions");
        seqs.sort_unstable();
        assert!(
            seqs.iter().copied().eq(0..5_000),
            "each packet exactly once"
        );
        let mean = got
            .iter()
            .map(|&(t, seq)| (t - Time((seq + 1) * 400_000)).as_secs_f64() * 1e3)
            .sum::<f64>()
            / got.len() as f64;
        // 5 ms / sqrt(5000) = 0.07 ms standard error.
        assert!((mean - 10.0).abs() < 0.3, "mean {mean} ms");
    }

    #[test]
    fn a_reordering_link_loses_its_delay_line_in_an_outage() {
        let mut l = reordering_link(Dur::from_millis(5));
        for i in 0..100 {
            l.enqueue(Time::ZERO, pkt(i, 1448)).unwrap();
        }
        // 20 ms on: some delivered, most on the wire or queued.
        let mut delivered = 0;
        while let Some(t) = l.poll_at().filter(|&t| t <= Time(20_000_000)) {
            while l.poll_deliver(t).is_some() {
                delivered += 1;
            }
        }
        let lost = l.set_up(Time(20_000_000), false);
        assert_eq!(delivered + lost.len(), 100);
        assert!(delivered > 0 && !lost.is_empty());
        assert_eq!(l.poll_at(), None);
    }

    #[test]
    fn rate_change_applies_to_next_packet() {
        let mut l = link(QueueLimit::Packets(100), 0.0);
        l.enqueue(Time::ZERO, pkt(0, 1448)).unwrap();
        l.enqueue(Time::ZERO, pkt(1, 1448)).unwrap();
        l.set_rate(Time(100_000), Rate::mbps(15));
        let got = drain(&mut l);
        // Packet 0 was already in service at 30 Mbit/s. Packet 1 starts at 400 us...
        assert_eq!(got[0].0, Time(10_400_000));
        // ...at the new rate: 800 us.
        assert_eq!(got[1].0, Time(11_200_000));
    }

    #[test]
    fn an_outage_loses_what_the_link_holds_and_what_is_offered_until_it_returns() {
        let mut l = link(QueueLimit::Packets(100), 0.0);
        let t0 = Time::ZERO;
        for s in 0..10 {
            l.enqueue(t0, pkt(s, 1448)).unwrap();
        }
        // 1 ms later: 2 packets serialized (0.4 ms each at 30 Mbit/s) are on the wire.
        let t1 = t0 + Dur::from_millis(1);
        let lost = l.set_up(t1, false);
        assert_eq!(lost.len(), 10);
        assert_eq!((l.backlog_bytes(), l.poll_at()), (0, None));
        assert_eq!(l.enqueue(t1, pkt(10, 1448)), Err(Drop::Outage));
        assert_eq!(l.stats().outage_drops, 11);
        assert!(l.set_up(t1 + Dur::from_millis(5), true).is_empty());
        let t2 = t1 + Dur::from_millis(5);
        let p = pkt(11, 1448);
        let tx = Rate::mbps(30).tx_time(u64::from(p.wire_len));
        l.enqueue(t2, p).unwrap();
        // Serialized from t2, then 10 ms of delay: nothing of before the outage is left.
        assert_eq!(l.poll_at(), Some(t2 + tx + Dur::from_millis(10)));
        let due = l.poll_at().unwrap();
        let back = l.poll_deliver(due).expect("delivered after the return");
        assert!(matches!(back.payload, Payload::Data(d) if d.seq == 11));
        assert_eq!(l.stats().delivered, 1);
    }
}

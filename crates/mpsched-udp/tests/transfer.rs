//! Whole transfers between the sans-IO client and server over emulated paths in virtual time:
//! every byte arrives once, in order, as the server read it.

use mpsched_core::subflow::rx::AckPolicy;
use mpsched_core::{Dur, Time};
use mpsched_udp::aead::Suite;
use mpsched_udp::client::{Client, ClientConfig};
use mpsched_udp::server::{Server, ServerConfig};
use mpsched_udp::session::Psk;
use mpsched_udp::source::{Pattern, Source};
use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::net::SocketAddr;
use std::sync::Arc;

/// One direction of a path: a rate, a delay, a drop-tail queue of `queue` of delay, random
/// loss, and intervals when it is down.
#[derive(Clone)]
struct Link {
    rate_bps: f64,
    delay: Dur,
    queue: Dur,
    loss: f64,
    down: Vec<(Time, Time)>,
    free_at: Time,
}

impl Link {
    fn new(mbps: f64, delay_ms: u64) -> Link {
        Link {
            rate_bps: mbps * 1e6,
            delay: Dur::from_millis(delay_ms),
            queue: Dur::from_millis(50),
            loss: 0.0,
            down: vec![],
            free_at: Time::ZERO,
        }
    }

    /// When a datagram of `len` bytes sent at `now` arrives, if it does.
    fn send(&mut self, now: Time, len: usize, rng: &mut u64) -> Option<Time> {
        if self.down.iter().any(|&(a, b)| now >= a && now < b) {
            return None;
        }
        *rng ^= *rng << 13;
        *rng ^= *rng >> 7;
        *rng ^= *rng << 17;
        let u = (*rng >> 11) as f64 / (1u64 << 53) as f64;
        if u < self.loss {
            return None;
        }
        let start = self.free_at.max(now);
        if start.0 - now.0 > self.queue.0 {
            return None;
        }
        // IP and UDP headers on the wire.
        let ser = Dur(((len + 28) as f64 * 8.0 / self.rate_bps * 1e9) as u64);
        self.free_at = start + ser;
        Some(self.free_at + self.delay)
    }
}

struct Net {
    /// Per path: (client -> server, server -> client).
    paths: Vec<(Link, Link)>,
}

enum Ev {
    ToServer(usize, Vec<u8>),
    ToClient(usize, Vec<u8>),
}

fn addr(path: usize) -> SocketAddr {
    SocketAddr::from(([10, 0, path as u8, 2], 40_000))
}

/// Runs a transfer of `size` bytes until the client has it all or `limit` passes; returns
/// the client and the time it completed.
fn transfer(net: &mut Net, size: u64, scheduler: &str, limit: Dur) -> (Client, Server, Time) {
    transfer_with(net, size, scheduler, limit, ClientConfig::default())
}

/// `transfer` with the client's options (`paths` set from `net`).
fn transfer_with(
    net: &mut Net,
    size: u64,
    scheduler: &str,
    limit: Dur,
    client_cfg: ClientConfig,
) -> (Client, Server, Time) {
    let psk = Psk::from_secret(b"buSuzgbRxSxu93c2DEIjCzkDV70SLX6gxfQrEThmej0=").unwrap();
    let source: Arc<dyn Source + Sync> = Arc::new(Pattern { len: Some(size) });
    let cfg = ServerConfig {
        scheduler: scheduler.into(),
        ..ServerConfig::default()
    };
    let mut server = Server::new(psk.clone(), cfg, source).unwrap();
    let n = net.paths.len();
    let mut client = Client::new(
        &psk,
        7,
        ClientConfig {
            paths: n,
            ..client_cfg
        },
        Time::ZERO,
    );
    let mut rng = 0x1234_5678_9abc_def1u64;
    let mut events: BinaryHeap<Reverse<(Time, u64, usize)>> = BinaryHeap::new();
    let mut payloads: Vec<Option<Ev>> = vec![];
    let mut seq = 0u64;
    let mut now = Time::ZERO;
    let mut offset = 0u64;
    let end = Time::ZERO + limit;
    loop {
        while let Some((p, d)) = client.poll_transmit() {
            if let Some(at) = net.paths[p].0.send(now, d.len(), &mut rng) {
                payloads.push(Some(Ev::ToServer(p, d)));
                events.push(Reverse((at, seq, payloads.len() - 1)));
                seq += 1;
            }
        }
        while let Some((to, d)) = server.poll_transmit() {
            let p = (0..n).find(|&p| addr(p) == to).expect("a path's address");
            if let Some(at) = net.paths[p].1.send(now, d.len(), &mut rng) {
                payloads.push(Some(Ev::ToClient(p, d)));
                events.push(Reverse((at, seq, payloads.len() - 1)));
                seq += 1;
            }
        }
        while let Some(bytes) = client.read(now) {
            for (i, b) in bytes.iter().enumerate() {
                assert_eq!(
                    *b,
                    Pattern::byte(offset + i as u64),
                    "byte {}",
                    offset + i as u64
                );
            }
            offset += bytes.len() as u64;
        }
        if client.is_complete() || now > end {
            return (client, server, now);
        }
        let timers = [client.poll_timeout(), server.poll_timeout()];
        let next_timer = timers.into_iter().flatten().min();
        let next_ev = events.peek().map(|Reverse((t, _, _))| *t);
        match (next_ev, next_timer) {
            (Some(e), t) if t.is_none_or(|t| e <= t) || t.is_none() => {
                let Reverse((t, _, k)) = events.pop().unwrap();
                now = t;
                match payloads[k].take().unwrap() {
                    Ev::ToServer(p, d) => server.handle(now, addr(p), &d),
                    Ev::ToClient(p, d) => client.handle(now, p, &d),
                }
            }
            (_, Some(t)) => {
                now = now.max(t);
                client.handle_timeout(now);
                server.handle_timeout(now);
            }
            (None, None) => panic!("nothing left to happen at {now:?}"),
            (Some(_), None) => unreachable!(),
        }
    }
}

#[test]
fn a_file_crosses_two_paths_whole_and_in_order() {
    let mut net = Net {
        paths: vec![
            (Link::new(30.0, 10), Link::new(30.0, 10)),
            (Link::new(30.0, 50), Link::new(30.0, 50)),
        ],
    };
    let size = 20_000_000;
    let (client, server, t) = transfer(&mut net, size, "linux", Dur::from_secs(60));
    assert!(
        client.is_complete(),
        "{} of {size} by {t:?}",
        client.delivered_bytes()
    );
    let secs = t.as_secs_f64();
    let mbps = size as f64 * 8.0 / secs / 1e6;
    eprintln!(
        "20 MB in {secs:.2} s: {mbps:.1} Mbit/s; drops {:?}",
        server.drops
    );
    // Both paths carry it: more than one path's 30 Mbit/s.
    assert!(mbps > 35.0, "{mbps} Mbit/s");
    assert!(client.bytes_received.iter().all(|&b| b > 1_000_000));
}

#[test]
fn loss_on_one_path_and_the_other_failing_for_5_s_lose_no_byte() {
    let mut lossy = Link::new(30.0, 50);
    lossy.loss = 0.01;
    let mut fails = (Link::new(30.0, 10), Link::new(30.0, 10));
    let outage = (
        Time::ZERO + Dur::from_secs(2),
        Time::ZERO + Dur::from_secs(7),
    );
    fails.0.down.push(outage);
    fails.1.down.push(outage);
    let mut net = Net {
        paths: vec![fails, (lossy.clone(), lossy)],
    };
    let size = 60_000_000;
    let (client, server, t) = transfer(&mut net, size, "linux", Dur::from_secs(120));
    assert!(
        client.is_complete(),
        "{} of {size} by {t:?}",
        client.delivered_bytes()
    );
    eprintln!(
        "60 MB in {:.2} s; drops {:?}",
        t.as_secs_f64(),
        server.drops
    );
}

#[test]
fn with_an_ack_frequency_and_either_aead_a_lossy_transfer_loses_no_byte_and_acks_less() {
    // 30 Mbit/s carries a segment every 0.38 ms: a delay of a quarter of the 40-ms RTT lets
    // 16 segments gather.
    let policy = AckPolicy {
        every: 16,
        max_delay: Dur::from_millis(10),
        ..AckPolicy::LINUX
    };
    let mut acks = vec![];
    for (suite, ack_policy, loss) in [
        (Suite::ChaCha20Poly1305, policy, 0.01),
        (Suite::Aes128Gcm, policy, 0.01),
        (Suite::Aes128Gcm, AckPolicy::LINUX, 0.0),
        (Suite::Aes128Gcm, policy, 0.0),
    ] {
        let mut link = Link::new(30.0, 20);
        link.loss = loss;
        let mut paths = vec![(link.clone(), link.clone()), (link.clone(), link.clone())];
        if loss == 0.0 {
            // One path and no drop-tail losses either: every segment arrives in order (the
            // ACKs that out-of-order arrivals and filled connection-level holes call for go
            // at once under either policy).
            link.queue = Dur::from_secs(60);
            paths = vec![(link.clone(), link)];
        }
        let mut net = Net { paths };
        let size = 10_000_000;
        let cfg = ClientConfig {
            aead: Some(suite),
            ack_policy,
            ..ClientConfig::default()
        };
        let (client, _, t) = transfer_with(&mut net, size, "linux", Dur::from_secs(60), cfg);
        assert!(
            client.is_complete(),
            "{suite}, loss {loss}: {} of {size} by {t:?}",
            client.delivered_bytes()
        );
        assert_eq!(client.suite(), Some(suite));
        acks.push(client.receiver().unwrap().stats.acks_sent);
    }
    // Without loss (out-of-order segments are ACKed at once either way).
    eprintln!(
        "ACKs for 10 MB: Linux's {}, every 16th {}",
        acks[2], acks[3]
    );
    assert!(acks[3] * 4 < acks[2], "{acks:?}");
}

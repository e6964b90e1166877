//! Every byte a network hands over is hostile: random, mutated, truncated, replayed and forged
//! datagrams, an unauthenticated flood, and a redirected path, against a live connection.
//! Nothing panics, every bad datagram is dropped and counted, none reaches the connection (the
//! stream still arrives whole), and an address that has not proved itself never gets more
//! than three times what came from it.
//!
//! The number of hostile datagrams per test is `MPSCHED_FUZZ_N` (default 20,000; run once with
//! 1,000,000, see docs/wire.md).

use mpsched_core::{Dur, Time};
use mpsched_udp::aead::Suite;
use mpsched_udp::client::{Client, ClientConfig};
use mpsched_udp::server::{Drops, Server, ServerConfig};
use mpsched_udp::session::Psk;
use mpsched_udp::source::{Pattern, Source};
use mpsched_udp::wire::{Header, Kind, MAX_DATAGRAM};
use std::net::SocketAddr;
use std::sync::Arc;

fn n() -> u64 {
    std::env::var("MPSCHED_FUZZ_N")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(20_000)
}

struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
}

fn addr(path: usize) -> SocketAddr {
    SocketAddr::from(([10, 0, path as u8, 2], 40_000))
}
const ATTACKER: SocketAddr = SocketAddr::new(
    std::net::IpAddr::V4(std::net::Ipv4Addr::new(203, 0, 113, 9)),
    666,
);

fn psk() -> Psk {
    Psk::from_secret(&[7; 32]).unwrap()
}

fn pair(size: u64, paths: usize) -> (Client, Server) {
    pair_with(size, paths, None)
}

/// A client and a server; `aead`: the one suite the client offers.
fn pair_with(size: u64, paths: usize, aead: Option<Suite>) -> (Client, Server) {
    let source: Arc<dyn Source + Sync> = Arc::new(Pattern { len: Some(size) });
    let server = Server::new(psk(), ServerConfig::default(), source).unwrap();
    let client = Client::new(
        &psk(),
        99,
        ClientConfig {
            paths,
            aead,
            ..ClientConfig::default()
        },
        Time::ZERO,
    );
    (client, server)
}

fn total(d: &Drops) -> u64 {
    d.malformed + d.unauthenticated + d.replayed + d.unknown_connection + d.over_capacity
}

/// A datagram drawn from `valid` (the client's real ones): random bytes, a bit flipped, cut
/// short, a random body under a valid header, or a replay.
fn hostile(rng: &mut Rng, valid: &[Vec<u8>]) -> (Vec<u8>, bool) {
    let v = &valid[rng.below(valid.len() as u64) as usize];
    match rng.below(5) {
        0 => {
            let len = rng.below(MAX_DATAGRAM as u64 + 100) as usize;
            ((0..len).map(|_| rng.next() as u8).collect(), false)
        }
        1 => {
            let mut d = v.clone();
            let i = rng.below(d.len() as u64) as usize;
            d[i] ^= 1 << rng.below(8);
            (d, false)
        }
        2 => (v[..rng.below(v.len() as u64) as usize].to_vec(), false),
        3 => {
            let mut d = v[..11.min(v.len())].to_vec();
            if d.len() == 11 && rng.below(2) == 0 {
                // A fresh packet number: decryption is tried, and fails.
                for b in &mut d[5..11] {
                    *b = rng.next() as u8;
                }
            }
            let len = rng.below(200) as usize;
            d.extend((0..len).map(|_| rng.next() as u8));
            (d, false)
        }
        _ => (v.clone(), true),
    }
}

#[test]
fn hostile_datagrams_are_dropped_and_counted_and_the_stream_arrives_whole() {
    attack(Suite::Aes128Gcm);
}

#[test]
fn under_chacha20_poly1305_too() {
    attack(Suite::ChaCha20Poly1305);
}

/// The attack on a connection sealed with `suite`.
fn attack(suite: Suite) {
    let size = 100_000_000;
    let (mut client, mut server) = pair_with(size, 2, Some(suite));
    let mut now = Time::ZERO;
    let mut log = vec![];
    let mut offset = 0u64;
    // Part of the transfer first, to have live keys, windows and timers to attack.
    for _ in 0..12 {
        let mut step = vec![];
        pump_once(&mut client, &mut server, &mut now, &mut step);
        drain(&mut client, &mut offset);
        log.extend(step);
    }
    assert!(!client.is_complete() && offset > 0, "{offset}");
    let valid: Vec<Vec<u8>> = log
        .iter()
        .map(|(_, d)| d.clone())
        .filter(|d| Header::decode(d).is_ok_and(|(h, _)| h.kind != Kind::Initial))
        .collect();
    assert!(valid.len() > 100);
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let before = server.drops;
    let mut replays = 0;
    let hostile_n = n();
    for _ in 0..hostile_n {
        let (d, replay) = hostile(&mut rng, &valid);
        let counted = total(&server.drops);
        server.handle(now, addr(rng.below(2) as usize), &d);
        // Every hostile datagram is dropped and counted (a flipped bit in a packet number
        // already seen counts as a replay: that check comes before decryption).
        assert_eq!(total(&server.drops), counted + 1, "{d:?}");
        replays += u64::from(replay);
        let (c, _) = hostile(&mut rng, &valid);
        client.handle(now, rng.below(2) as usize, &c);
    }
    assert!(server.drops.replayed >= before.replayed + replays);
    assert_eq!(
        server.poll_transmit().map(|(a, _)| a),
        None,
        "no answer to any of them"
    );
    // The connection is unharmed: the stream completes, byte for byte.
    for _ in 0..100_000 {
        pump_once(&mut client, &mut server, &mut now, &mut vec![]);
        drain(&mut client, &mut offset);
        if client.is_complete() {
            break;
        }
    }
    assert!(
        client.is_complete(),
        "{} delivered",
        client.delivered_bytes()
    );
    assert_eq!(offset, size);
    assert_eq!(client.suite(), Some(suite));
    eprintln!(
        "{hostile_n} hostile datagrams each way ({suite}); server drops {:?}",
        server.drops
    );
}

/// Takes the client's in-order bytes, checking each against the stream.
fn drain(client: &mut Client, offset: &mut u64) {
    while let Some(bytes) = client.read() {
        for (i, b) in bytes.iter().enumerate() {
            assert_eq!(*b, Pattern::byte(*offset + i as u64));
        }
        *offset += bytes.len() as u64;
    }
}

/// One round of `pump`.
fn pump_once(
    client: &mut Client,
    server: &mut Server,
    now: &mut Time,
    log: &mut Vec<(SocketAddr, Vec<u8>)>,
) {
    while let Some((p, d)) = client.poll_transmit() {
        log.push((addr(p), d.clone()));
        server.handle(*now, addr(p), &d);
    }
    while let Some((to, d)) = server.poll_transmit() {
        if let Some(p) = (0..8).find(|&p| addr(p) == to) {
            client.handle(*now, p, &d);
        }
    }
    *now += Dur::from_millis(1);
    client.handle_timeout(*now);
    server.handle_timeout(*now);
}

#[test]
fn an_unauthenticated_flood_gets_no_answer() {
    let (_, mut server) = pair(1_000_000, 1);
    let mut rng = Rng(12345);
    let flood = n();
    for _ in 0..flood {
        // Initials of the right size and kind, from a spoofed address, without the key.
        let mut d = vec![mpsched_udp::wire::VERSION << 4 | Kind::Initial as u8];
        let rest =
            mpsched_udp::wire::HANDSHAKE_HEADER_LEN - 1 + mpsched_udp::session::HANDSHAKE_MSG_LEN;
        d.extend((0..rest).map(|_| rng.next() as u8));
        server.handle(Time::ZERO, ATTACKER, &d);
    }
    assert_eq!(server.drops.unauthenticated, flood);
    assert_eq!(server.connections(), 0);
    assert!(server.poll_transmit().is_none());
}

#[test]
fn a_path_redirected_to_another_address_gets_at_most_three_times_what_came_from_there() {
    let (mut client, mut server) = pair(2_000_000, 2);
    let mut now = Time::ZERO;
    // The handshake, then the client's Joins: an attacker on path 1 rewrites the source of
    // its Join to its own address (the datagram is genuine: it authenticates).
    while let Some((p, d)) = client.poll_transmit() {
        server.handle(now, addr(p), &d);
    }
    while let Some((_, d)) = server.poll_transmit() {
        client.handle(now, 0, &d);
    }
    let mut from_attacker = 0usize;
    while let Some((p, d)) = client.poll_transmit() {
        let src = if p == 1 { ATTACKER } else { addr(p) };
        if src == ATTACKER {
            from_attacker += d.len();
        }
        server.handle(now, src, &d);
    }
    let mut to_attacker = 0usize;
    for _ in 0..20_000 {
        while let Some((to, d)) = server.poll_transmit() {
            if to == ATTACKER {
                to_attacker += d.len();
            } else if let Some(p) = (0..8).find(|&p| addr(p) == to) {
                client.handle(now, p, &d);
            }
        }
        while let Some((p, d)) = client.poll_transmit() {
            server.handle(now, addr(p), &d);
        }
        now += Dur::from_millis(1);
        client.handle_timeout(now);
        server.handle_timeout(now);
        if client.is_complete() {
            break;
        }
    }
    assert!(to_attacker > 0, "the JoinAck went there");
    assert!(
        to_attacker <= 3 * from_attacker,
        "{to_attacker} bytes sent to an unproven address that sent {from_attacker}"
    );
    // The real client joined path 1 from its own address when it tried again, and finished.
    assert!(client.is_complete());
    assert!(client.bytes_received[1] > 0, "path 1 carried data");
}

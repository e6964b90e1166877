//! Every byte a network hands over is hostile: random, mutated, truncated, replayed and forged
//! datagrams of every kind (Initials, Responses, cookies, resets, challenges and proofs among
//! them), an unauthenticated flood, and a redirected path, against a live connection, on both
//! ends. Nothing panics, every bad datagram is dropped and counted, none reaches the
//! connection (the stream still arrives whole), the only answer any draws is a stateless
//! reset smaller than itself, and an address that has not proved itself never gets more than
//! three times what came from it.
//!
//! The number of hostile datagrams per test is `MPSCHED_FUZZ_N` (default 20,000; run once with
//! 1,000,000, see docs/wire.md).

use mpsched_core::{Dur, Time};
use mpsched_udp::aead::Suite;
use mpsched_udp::client::{Client, ClientConfig};
use mpsched_udp::server::{Server, ServerConfig};
use mpsched_udp::session::{cookie_reply, reset_datagram, Psk};
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
    Psk::from_secret(b"ZfJ8Qv3m0yq1sX7e2k9LhT4uNcB6aWdRgPiEoY5jVzM=").unwrap()
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
    let mut served = vec![];
    let mut offset = 0u64;
    // Part of the transfer first, to have live keys, windows and timers to attack.
    for i in 0..12 {
        let mut step = vec![];
        if i == 6 {
            // A silence: the client's keepalive challenge and the server's proof join the
            // datagrams to mutate.
            now += Dur::from_millis(1_200);
            client.handle_timeout(now);
            server.handle_timeout(now);
        }
        pump_logged(&mut client, &mut server, &mut now, &mut step, &mut served);
        drain(&mut client, now, &mut offset);
        log.extend(step);
    }
    assert!(!client.is_complete() && offset > 0, "{offset}");
    let valid: Vec<Vec<u8>> = log
        .iter()
        .map(|(_, d)| d.clone())
        .filter(|d| Header::decode(d).is_ok_and(|(h, _)| h.kind != Kind::Initial))
        .collect();
    assert!(valid.len() > 100);
    // What the server sent, and handshake kinds of its own the client must shrug off: a
    // Response, a cookie for the client's Initial, a reset for one of the client's ids.
    let initial = log
        .iter()
        .find(|(_, d)| Header::decode(d).is_ok_and(|(h, _)| h.kind == Kind::Initial))
        .map(|(_, d)| d.clone())
        .expect("the Initial");
    let mut from_server: Vec<Vec<u8>> = served.clone();
    from_server.push(cookie_reply(&psk(), &initial, &[3; 16]));
    let data_id = served
        .iter()
        .find_map(|d| Header::decode(d).ok().filter(|(h, _)| h.kind == Kind::Data))
        .map(|(h, _)| h.conn_id)
        .unwrap();
    let reset = reset_datagram(&psk(), data_id);
    from_server.push(reset.clone());
    let mut to_server = valid.clone();
    to_server.push(initial.clone());
    for kind in [
        Kind::Initial,
        Kind::Response,
        Kind::Data,
        Kind::JoinAck,
        Kind::Challenge,
        Kind::Proof,
        Kind::Reset,
    ] {
        assert!(
            to_server
                .iter()
                .chain(&from_server)
                .any(|d| Header::decode(d).is_ok_and(|(h, _)| h.kind == kind)),
            "{kind:?} among the datagrams mutated"
        );
    }
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let before = server.drops;
    let mut replays = 0;
    let hostile_n = n();
    let (mut resets, mut reset_bytes, mut trigger_bytes) = (0u64, 0usize, 0usize);
    for _ in 0..hostile_n {
        let (d, replay) = hostile(&mut rng, &to_server);
        let counted = server.drops.total();
        server.handle(now, addr(rng.below(2) as usize), &d);
        // Every hostile datagram is dropped and counted (a flipped bit in a packet number
        // already seen counts as a replay: that check comes before decryption).
        assert_eq!(server.drops.total(), counted + 1, "{d:?}");
        replays += u64::from(replay);
        // The only answer: a reset, to a datagram naming no connection, smaller than it.
        while let Some((_, answer)) = server.poll_transmit() {
            assert_eq!(Header::decode(&answer).unwrap().0.kind, Kind::Reset);
            assert!(answer.len() < d.len());
            resets += 1;
            reset_bytes += answer.len();
            trigger_bytes += d.len();
        }
        let (c, replay) = hostile(&mut rng, &from_server);
        if replay && c == reset {
            // A genuine reset is not hostile: the server really lost the connection.
            continue;
        }
        let counted = client.drops.total();
        client.handle(now, rng.below(2) as usize, &c);
        assert_eq!(client.drops.total(), counted + 1, "{c:?}");
        assert!(client.failed().is_none(), "{c:?} ended the connection");
    }
    assert!(server.drops.replayed >= before.replayed + replays);
    // A reset for each datagram naming no connection, unless too short to be outsized.
    assert!(resets > 0 && resets <= server.drops.unknown_connection);
    assert!(reset_bytes < trigger_bytes);
    // The connection is unharmed: the stream completes, byte for byte.
    for _ in 0..100_000 {
        pump_once(&mut client, &mut server, &mut now, &mut vec![]);
        drain(&mut client, now, &mut offset);
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
        "{hostile_n} hostile datagrams each way ({suite}); server drops {:?}; {resets} resets \
         ({reset_bytes} bytes for {trigger_bytes}); client drops {:?}",
        server.drops, client.drops
    );
}

/// Takes the client's in-order bytes, checking each against the stream.
fn drain(client: &mut Client, now: Time, offset: &mut u64) {
    while let Some(bytes) = client.read(now) {
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
    pump_logged(client, server, now, log, &mut vec![]);
}

/// One round, keeping the client's datagrams in `log` and the server's in `served`.
fn pump_logged(
    client: &mut Client,
    server: &mut Server,
    now: &mut Time,
    log: &mut Vec<(SocketAddr, Vec<u8>)>,
    served: &mut Vec<Vec<u8>>,
) {
    while let Some((p, d)) = client.poll_transmit() {
        log.push((addr(p), d.clone()));
        server.handle(*now, addr(p), &d);
    }
    while let Some((to, d)) = server.poll_transmit() {
        if let Some(p) = (0..8).find(|&p| addr(p) == to) {
            served.push(d.clone());
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
        d.extend((1..mpsched_udp::session::INITIAL_LEN).map(|_| rng.next() as u8));
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
        // The application reads (what it has not read closes the window).
        while client.read(now).is_some() {}
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

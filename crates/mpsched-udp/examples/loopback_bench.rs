//! The transport's speed on this machine's loopback, in one process: a server thread and a
//! client thread (the driver's `serve` and `run_client`, as `mpsched serve`/`get` run them),
//! a generated stream hashed by the client (SHA-256, as `get` does). Prints goodput and the
//! process's CPU seconds (user + system, both ends) per GB.
//!
//! `cargo run --release -p mpsched-udp --example loopback_bench -- [bytes] [paths] [ack_every]`
//! (default 1 GB over one path with Linux's delayed ACK; a second path binds 127.0.0.2;
//! `ack_every` N: an ACK per N in-order segments, as `mpsched get --ack-every N`).

use mpsched_core::subflow::rx::AckPolicy;
use mpsched_udp::client::{Client, ClientConfig};
use mpsched_udp::driver::{client_sockets, run_client, serve, Clock};
use mpsched_udp::server::{Server, ServerConfig};
use mpsched_udp::session::Psk;
use mpsched_udp::source::{Pattern, Source};
use sha2::{Digest, Sha256};
use std::net::{SocketAddr, UdpSocket};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

fn cpu_seconds() -> f64 {
    // SAFETY: `rusage` is plain old data; all zeroes is a valid value.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: `usage` is a valid out-pointer for the call.
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut usage) };
    let t = |v: libc::timeval| v.tv_sec as f64 + v.tv_usec as f64 / 1e6;
    t(usage.ru_utime) + t(usage.ru_stime)
}

fn main() {
    let mut args = std::env::args().skip(1);
    let size: u64 = args.next().map_or(1_000_000_000, |s| s.parse().unwrap());
    let paths: usize = args.next().map_or(1, |s| s.parse().unwrap());
    let ack_policy = args.next().map_or(AckPolicy::LINUX, |s| AckPolicy {
        every: s.parse().unwrap(),
        max_delay: mpsched_udp::app::ACK_FREQUENCY_DELAY,
        ..AckPolicy::LINUX
    });
    let psk = Psk::from_secret(b"sDFdGpLJ/8K76fLvuQnBOiV0kYXEta3Ztp1MYxdme00=").unwrap();
    let source: Arc<dyn Source + Sync> = Arc::new(Pattern { len: Some(size) });
    let socket = UdpSocket::bind("127.0.0.1:0").unwrap();
    let server_addr = socket.local_addr().unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let stop2 = stop.clone();
    let server_psk = psk.clone();
    let cpu0 = cpu_seconds();
    let handle = std::thread::spawn(move || {
        let mut server = Server::new(server_psk, ServerConfig::default(), source).unwrap();
        serve(&socket, &mut server, &stop2, |_| {}).unwrap();
        server.drops
    });
    let locals: Vec<SocketAddr> = (0..paths)
        .map(|p| format!("127.0.0.{}:0", p + 1).parse().unwrap())
        .collect();
    let sockets = client_sockets(&locals, server_addr).unwrap();
    let clock = Clock::start();
    let mut client = Client::new(
        &psk,
        0xbe4c,
        ClientConfig {
            paths,
            ack_policy,
            ..ClientConfig::default()
        },
        clock.now(),
    );
    let mut hash = Sha256::new();
    let mut got = 0u64;
    let never = AtomicBool::new(false);
    run_client(
        &sockets,
        &mut client,
        &clock,
        &never,
        None,
        |bytes| {
            hash.update(bytes);
            got += bytes.len() as u64;
            Ok(())
        },
        |_, _| {},
    )
    .unwrap();
    let secs = client
        .receiver()
        .and_then(|r| r.complete_at())
        .unwrap_or(clock.now())
        .as_secs_f64();
    stop.store(true, Ordering::Relaxed);
    let drops = handle.join().unwrap();
    let cpu = cpu_seconds() - cpu0;
    assert!(client.is_complete(), "{got} of {size}");
    println!(
        "paths {paths} aead {} bytes {got} seconds {secs:.3} goodput_mbps {:.0} cpu_s {cpu:.2} cpu_s_per_gb {:.2} client_drops {:?} server_drops {:?} sha256 {:x}",
        client.suite().map_or("none", |s| s.name()),
        got as f64 * 8.0 / secs / 1e6,
        cpu / (got as f64 / 1e9),
        client.drops,
        drops,
        hash.finalize()
    );
    // Each subflow's end state: a standing queue shows as a smoothed RTT far above the least.
    for s in client.server_stats().unwrap_or(&[]) {
        println!(
            "  subflow {} packets {} retransmits {} srtt_ms {:.3} min_rtt_ms {:.3} cwnd {}",
            s.subflow,
            s.packets_sent,
            s.retransmits,
            f64::from(s.srtt_us) / 1e3,
            f64::from(s.min_rtt_us) / 1e3,
            s.cwnd
        );
    }
    if let Some(rx) = client.receiver() {
        println!("  acks sent {}", rx.stats.acks_sent);
    }
}

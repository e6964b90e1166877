//! The transport over real UDP sockets on this machine's loopback: two paths (two local
//! addresses), a generated stream checked byte by byte.

use mpsched_udp::client::{Client, ClientConfig};
use mpsched_udp::driver::{client_sockets, run_client, serve, Clock};
use mpsched_udp::server::{Server, ServerConfig};
use mpsched_udp::session::Psk;
use mpsched_udp::source::{Pattern, Source};
use std::net::{SocketAddr, UdpSocket};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

#[test]
fn a_stream_crosses_two_loopback_paths_whole() {
    let psk = Psk::from_secret(b"000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f")
        .unwrap();
    let size = 50_000_000u64;
    let source: Arc<dyn Source + Sync> = Arc::new(Pattern { len: Some(size) });
    let server_psk = psk.clone();
    let socket = UdpSocket::bind("127.0.0.1:0").unwrap();
    let server_addr = socket.local_addr().unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let stop2 = stop.clone();
    let handle = std::thread::spawn(move || {
        // The core's connection is built on the thread that runs it (it is not `Send`).
        let mut server = Server::new(server_psk, ServerConfig::default(), source).unwrap();
        serve(&socket, &mut server, &stop2, |_| {}).unwrap();
        server.drops
    });
    let locals: Vec<SocketAddr> = vec![
        "127.0.0.1:0".parse().unwrap(),
        "127.0.0.2:0".parse().unwrap(),
    ];
    let sockets = client_sockets(&locals, server_addr).unwrap();
    let clock = Clock::start();
    let mut client = Client::new(
        &psk,
        0x5eed,
        ClientConfig {
            paths: 2,
            ..ClientConfig::default()
        },
        clock.now(),
    );
    let mut offset = 0u64;
    let never = AtomicBool::new(false);
    run_client(
        &sockets,
        &mut client,
        &clock,
        &never,
        None,
        |bytes| {
            for (i, b) in bytes.iter().enumerate() {
                assert_eq!(*b, Pattern::byte(offset + i as u64));
            }
            offset += bytes.len() as u64;
            Ok(())
        },
        |_, _| {},
    )
    .unwrap();
    let secs = clock.now().as_secs_f64();
    stop.store(true, Ordering::Relaxed);
    let drops = handle.join().unwrap();
    assert_eq!(offset, size);
    assert!(client.is_complete());
    eprintln!(
        "{size} bytes in {secs:.2} s ({:.0} Mbit/s); per path {:?}; server drops {drops:?}",
        size as f64 * 8.0 / secs / 1e6,
        client.bytes_received
    );
    assert!(
        client.bytes_received.iter().all(|&b| b > 0),
        "both paths used"
    );
    assert_eq!(drops, Default::default());
}

//! quinn 0.11 as the transport's benchmark peer: the server sends SIZE bytes of the same
//! generated stream as `mpsched serve` (`Pattern`, a word at a time) on one unidirectional
//! stream, the client reads them and hashes them with SHA-256 (the same crate as `mpsched
//! get`). TLS 1.3 with AES-128-GCM only, ring's (the suite `mpsched get` negotiates on a CPU
//! with AES-NI); both ends' windows set to WINDOW bytes (the transport's default receive
//! buffer, 6 MiB).
//!
//! ```text
//! quinn-peer serve BIND SIZE CERT_OUT [WINDOW]   # prints "ready" once listening; SIGTERM ends it
//! quinn-peer get SERVER CERT [WINDOW]            # prints one JSON line
//! ```

use quinn::crypto::rustls::{QuicClientConfig, QuicServerConfig};
use quinn::{ClientConfig, Endpoint, ServerConfig, TransportConfig, VarInt};
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
use sha2::{Digest, Sha256};
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Instant;

const DEFAULT_WINDOW: u64 = 6 << 20;
/// Bytes generated and written per call.
const CHUNK: usize = 1 << 16;

/// `mpsched_udp::source::Pattern`'s word `w` (bytes `8w..8w + 8`, little-endian).
fn word(w: u64) -> u64 {
    let mut z = w.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

fn fill(offset: u64, buf: &mut [u8]) {
    debug_assert!(offset % 8 == 0 && buf.len() % 8 == 0);
    for (i, c) in buf.chunks_exact_mut(8).enumerate() {
        c.copy_from_slice(&word(offset / 8 + i as u64).to_le_bytes());
    }
}

fn provider() -> Arc<rustls::crypto::CryptoProvider> {
    let mut p = rustls::crypto::ring::default_provider();
    p.cipher_suites = vec![rustls::crypto::ring::cipher_suite::TLS13_AES_128_GCM_SHA256];
    Arc::new(p)
}

fn transport(window: u64) -> Arc<TransportConfig> {
    let mut t = TransportConfig::default();
    let w = VarInt::from_u64(window).expect("a window below 2^62");
    t.stream_receive_window(w);
    t.receive_window(w);
    t.send_window(window);
    Arc::new(t)
}

async fn serve(bind: SocketAddr, size: u64, cert_out: &str, window: u64) {
    let cert = rcgen::generate_simple_self_signed(vec!["localhost".into()]).expect("a cert");
    std::fs::write(cert_out, cert.cert.der()).expect("cert written");
    let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(cert.key_pair.serialize_der()));
    let tls = rustls::ServerConfig::builder_with_provider(provider())
        .with_protocol_versions(&[&rustls::version::TLS13])
        .expect("TLS 1.3")
        .with_no_client_auth()
        .with_single_cert(vec![cert.cert.der().clone()], key)
        .expect("the cert");
    let mut cfg = ServerConfig::with_crypto(Arc::new(
        QuicServerConfig::try_from(tls).expect("a QUIC suite"),
    ));
    cfg.transport_config(transport(window));
    let endpoint = Endpoint::server(cfg, bind).expect("bind");
    println!("ready");
    let mut term =
        tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()).expect("SIGTERM");
    loop {
        tokio::select! {
            _ = term.recv() => break,
            incoming = endpoint.accept() => {
                let Some(incoming) = incoming else { break };
                tokio::spawn(async move {
                    let Ok(conn) = incoming.await else { return };
                    let Ok(mut s) = conn.open_uni().await else { return };
                    let mut buf = vec![0u8; CHUNK];
                    let mut off = 0u64;
                    while off < size {
                        let n = (size - off).min(CHUNK as u64) as usize;
                        fill(off, &mut buf[..n.next_multiple_of(8).min(CHUNK)]);
                        if s.write_all(&buf[..n]).await.is_err() {
                            return;
                        }
                        off += n as u64;
                    }
                    let _ = s.finish();
                    conn.closed().await;
                });
            }
        }
    }
    endpoint.close(VarInt::from_u32(0), b"bye");
}

async fn get(server: SocketAddr, cert: &str, window: u64) {
    let mut roots = rustls::RootCertStore::empty();
    roots
        .add(CertificateDer::from(std::fs::read(cert).expect("cert read")))
        .expect("the cert");
    let tls = rustls::ClientConfig::builder_with_provider(provider())
        .with_protocol_versions(&[&rustls::version::TLS13])
        .expect("TLS 1.3")
        .with_root_certificates(roots)
        .with_no_client_auth();
    let mut cfg = ClientConfig::new(Arc::new(
        QuicClientConfig::try_from(tls).expect("a QUIC suite"),
    ));
    cfg.transport_config(transport(window));
    let mut endpoint = Endpoint::client("127.0.0.1:0".parse().unwrap()).expect("bind");
    endpoint.set_default_client_config(cfg);
    let start = Instant::now();
    let conn = endpoint
        .connect(server, "localhost")
        .expect("connect")
        .await
        .expect("handshake");
    let mut s = conn.accept_uni().await.expect("a stream");
    let mut hash = Sha256::new();
    let mut bytes = 0u64;
    while let Some(chunk) = s.read_chunk(usize::MAX, true).await.expect("read") {
        hash.update(&chunk.bytes);
        bytes += chunk.bytes.len() as u64;
    }
    let secs = start.elapsed().as_secs_f64();
    // quinn's smoothed RTT at the end: the queue the window keeps, beside `mpsched get`'s srtt.
    let rtt_ms = conn.rtt().as_secs_f64() * 1e3;
    conn.close(VarInt::from_u32(0), b"done");
    endpoint.wait_idle().await;
    let sha: String = hash.finalize().iter().map(|b| format!("{b:02x}")).collect();
    println!(
        r#"{{"bytes": {bytes}, "duration_s": {secs}, "goodput_mbps": {}, "sha256": "{sha}", "aead": "aes-128-gcm", "complete": true, "srtt_ms": {rtt_ms:.3}}}"#,
        bytes as f64 * 8.0 / secs / 1e6
    );
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    let window = |i: usize| args.get(i).map_or(DEFAULT_WINDOW, |w| w.parse().expect("WINDOW"));
    match args.first().map(String::as_str) {
        Some("serve") if args.len() >= 4 => rt.block_on(serve(
            args[1].parse().expect("BIND"),
            args[2].parse().expect("SIZE"),
            &args[3],
            window(4),
        )),
        Some("get") if args.len() >= 3 => {
            rt.block_on(get(args[1].parse().expect("SERVER"), &args[2], window(3)))
        }
        _ => {
            eprintln!("usage: quinn-peer serve BIND SIZE CERT_OUT [WINDOW] | get SERVER CERT [WINDOW]");
            std::process::exit(2);
        }
    }
}

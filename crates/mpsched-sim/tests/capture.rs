//! Packet captures of runs (`mpsched run --pcap`), read back block by block: every packet's
//! headers are well formed (lengths agree with the model's wire length, checksums verify),
//! time never goes backwards, and each vantage sees the packets the summary counts.
//! `tests/test_pcap.py` has tshark decode the MPTCP options against the traces.

mod common;

use common::Shared;
use mpsched_sim::build::*;
use mpsched_sim::capture::Vantage;
use mpsched_sim::config::{Config, FlowConfig, Protocol, QueueSpec, Workload};
use mpsched_sim::{Simulation, Summary};
use std::collections::BTreeMap;
use std::io::Write;

/// One Enhanced Packet Block.
struct Captured {
    interface: u32,
    t_ns: u64,
    orig_len: u32,
    headers: Vec<u8>,
}

impl Captured {
    fn ip_len(&self) -> u32 {
        u32::from(u16::from_be_bytes([self.headers[2], self.headers[3]]))
    }
    fn tcp(&self) -> &[u8] {
        &self.headers[20..]
    }
    fn tcp_header_len(&self) -> usize {
        usize::from(self.tcp()[12] >> 4) * 4
    }
    fn payload_len(&self) -> u32 {
        self.ip_len() - 20 - self.tcp_header_len() as u32
    }
    fn src_port(&self) -> u16 {
        u16::from_be_bytes([self.tcp()[0], self.tcp()[1]])
    }
    fn dst_port(&self) -> u16 {
        u16::from_be_bytes([self.tcp()[2], self.tcp()[3]])
    }
    fn flags(&self) -> u8 {
        self.tcp()[13]
    }
    /// The TCP options as (kind, body).
    fn options(&self) -> Vec<(u8, Vec<u8>)> {
        let opts = &self.tcp()[20..self.tcp_header_len()];
        let mut out = Vec::new();
        let mut i = 0;
        while i < opts.len() {
            match opts[i] {
                0 => break,
                1 => i += 1,
                kind => {
                    let len = usize::from(opts[i + 1]);
                    assert!(len >= 2 && i + len <= opts.len(), "option {kind} overruns");
                    out.push((kind, opts[i + 2..i + len].to_vec()));
                    i += len;
                }
            }
        }
        out
    }
    /// The DSS option's flags, if the packet carries one.
    fn dss_flags(&self) -> Option<u8> {
        self.options()
            .into_iter()
            .find(|(kind, body)| *kind == 30 && body[0] >> 4 == 2)
            .map(|(_, body)| body[1])
    }
}

/// Reads a pcapng file back (`mpsched_pcap::read` checks every block's framing).
fn read(bytes: &[u8]) -> (Vec<String>, Vec<Captured>) {
    let section = mpsched_pcap::read(bytes).expect("well-formed pcapng");
    let packets = section
        .packets
        .into_iter()
        .map(|p| Captured {
            interface: p.interface,
            t_ns: p.t_ns,
            orig_len: p.orig_len,
            headers: p.data,
        })
        .collect();
    (section.interfaces, packets)
}

/// The one's-complement sum of `data` (RFC 1071), folded.
fn ones_sum(mut sum: u32, data: &[u8]) -> u32 {
    for pair in data.chunks(2) {
        let hi = u32::from(pair[0]) << 8;
        sum += hi | pair.get(1).map_or(0, |&lo| u32::from(lo));
    }
    while sum > 0xFFFF {
        sum = (sum & 0xFFFF) + (sum >> 16);
    }
    sum
}

/// Checks every packet's headers; the model's wire length is each packet's IP length.
fn check_headers(p: &Captured) {
    let h = &p.headers;
    assert_eq!(h[0], 0x45, "IPv4 without options");
    assert_eq!(
        p.ip_len(),
        p.orig_len,
        "IP total length is the packet's length"
    );
    assert_eq!(ones_sum(0, &h[..20]), 0xFFFF, "IPv4 header checksum");
    assert_eq!(
        h.len(),
        20 + p.tcp_header_len(),
        "headers captured, payload not"
    );
    // The TCP checksum covers a payload of zeros, which adds nothing to the sum.
    let mut pseudo = Vec::from(&h[12..20]);
    pseudo.extend_from_slice(&[0, 6]);
    pseudo.extend_from_slice(&((p.ip_len() - 20) as u16).to_be_bytes());
    assert_eq!(
        ones_sum(ones_sum(0, &pseudo), p.tcp()),
        0xFFFF,
        "TCP checksum"
    );
    p.options();
}

fn capture(cfg: Config, vantage: Vantage) -> (Summary, Vec<String>, Vec<Captured>) {
    let out = Shared::default();
    let mut sim = Simulation::new(cfg, false).unwrap();
    sim.capture(vantage, Box::new(out.clone())).unwrap();
    let summary = sim.run().summary;
    let (names, packets) = read(&out.0.borrow());
    let mut last = 0;
    for p in &packets {
        assert!(p.t_ns >= last, "time went back at {}", p.t_ns);
        last = p.t_ns;
        check_headers(p);
        assert!((p.interface as usize) < names.len());
    }
    (summary, names, packets)
}

/// Two lossy paths with small buffers (losses, SACK, retransmissions), a 3 MB file, and a
/// competing MPTCP file and TCP bulk flow.
fn lossy_with_flows() -> Config {
    let mut c = scenario(
        vec![
            path("wifi", 20 * MBPS, 20 * MS, QueueSpec::Bytes(30_000), 0.01),
            path("lte", 10 * MBPS, 80 * MS, QueueSpec::Bytes(60_000), 0.005),
        ],
        "default",
        20 * S,
    );
    c.workload = Workload::File {
        size_bytes: 3_000_001,
    };
    let flow = |protocol, size_bytes, paths| FlowConfig {
        start_ns: 200 * MS,
        protocol,
        scheduler: "minrtt".into(),
        scheduler_params: BTreeMap::new(),
        congestion: "reno".into(),
        size_bytes,
        paths,
    };
    c.flows = vec![
        flow(Protocol::Mptcp, Some(500_000), vec![0, 1]),
        flow(Protocol::Tcp, None, vec![1]),
    ];
    c
}

fn is_data(p: &Captured) -> bool {
    p.src_port() == 5201 && p.payload_len() > 0
}

#[test]
fn the_sender_sees_every_data_packet_the_summary_counts() {
    let (s, names, packets) = capture(lossy_with_flows(), Vantage::Sender);
    assert_eq!(names, ["server wifi", "server lte"]);
    // Each connection (client ports 40000, 40001, 40002) opens with a handshake and sends.
    for k in 0..3u16 {
        let port = 40_000 + k;
        let first = packets
            .iter()
            .find(|p| p.dst_port() == port || p.src_port() == port)
            .unwrap();
        assert_eq!(
            first.flags() & 0x02,
            0x02,
            "connection {k} begins with a SYN"
        );
        let sent: u64 = packets
            .iter()
            .filter(|p| is_data(p) && p.dst_port() == port)
            .count() as u64;
        let flow = &s.flows[usize::from(k)];
        let counted = flow.packets_sent;
        assert_eq!(sent, counted, "connection {k}");
        assert!(counted > 0);
    }
    // Both files end with a DATA_FIN (RFC 8684 3.3.3) in the mapping of their last byte.
    for port in [40_000, 40_001] {
        let fins = packets
            .iter()
            .filter(|p| is_data(p) && p.dst_port() == port)
            .filter(|p| p.dss_flags().is_some_and(|f| f & 0x10 != 0))
            .count();
        assert!(fins >= 1, "port {port}: no DATA_FIN");
    }
    // MPTCP ACKs carry at most one SACK block beside timestamps and the DSS; TCP ACKs three.
    for p in packets
        .iter()
        .filter(|p| p.src_port() != 5201 && p.flags() & 0x02 == 0)
    {
        for (kind, body) in p.options() {
            if kind == 5 {
                let max = if p.src_port() == 40_002 { 3 } else { 1 };
                assert!(body.len() / 8 <= max, "{} SACK blocks", body.len() / 8);
            }
        }
    }
}

#[test]
fn the_receiver_and_the_links_see_what_arrives() {
    let cfg = lossy_with_flows();
    let (_, names, sender) = capture(cfg.clone(), Vantage::Sender);
    assert_eq!(names.len(), 2);
    let (s, names, receiver) = capture(cfg.clone(), Vantage::Receiver);
    assert_eq!(names, ["client wifi", "client lte"]);
    let (_, names, links) = capture(cfg, Vantage::Links);
    assert_eq!(names, ["wifi down", "wifi up", "lte down", "lte up"]);
    // What the client receives is what the data links deliver: sent less the drops, less
    // what is still on the way when the run ends.
    let arrived = |ps: &[Captured]| ps.iter().filter(|p| is_data(p)).count() as u64;
    assert_eq!(arrived(&receiver), arrived(&links));
    let dropped: u64 = s.flows.iter().map(|f| f.queue_drops + f.random_drops).sum();
    let sent = arrived(&sender);
    assert!(dropped > 0);
    assert!(arrived(&receiver) <= sent - dropped);
    assert!(arrived(&receiver) + 200 > sent - dropped);
    // Data crosses the down links only, ACKs the up links only.
    for p in &links {
        assert_eq!(p.interface % 2 == 0, p.src_port() == 5201);
    }
}

#[test]
fn a_failed_write_stops_the_run() {
    struct Full(usize);
    impl Write for Full {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            if self.0 < buf.len() {
                return Err(std::io::Error::other("disk full"));
            }
            self.0 -= buf.len();
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut cfg = lossy_with_flows();
    cfg.workload = Workload::Bulk;
    cfg.flows.clear();
    let mut sim = Simulation::new(cfg, false).unwrap();
    sim.capture(Vantage::Sender, Box::new(Full(100_000)))
        .unwrap();
    let s = sim.run().summary;
    // The run stops at its next check (every WATCH_EVERY events), marked as cut short.
    let at = s.interrupted_at_s.expect("marked interrupted");
    assert!(at < 19.0, "ran on to {at} s");
}

/// A path whose address goes away and comes back: the subflow that joins again is a new TCP
/// connection in the capture, with a port, a handshake and sequence numbers of its own.
#[test]
fn a_subflow_that_joins_again_has_its_own_port_and_handshake() {
    let mut c = stms_lab(100 * MS, 4 * S);
    c.paths[1].schedule = vec![presence(S, false), presence(2 * S, true)];
    let (_, names, packets) = capture(c, Vantage::Sender);
    let lte = names.iter().position(|n| n == "server lte").unwrap() as u32;
    const SYN: u8 = 0x02;
    // The SYNs (MP_JOIN) the server saw on LTE, and the ports that carried data there.
    let syns: Vec<(u64, u16)> = (packets.iter())
        .filter(|p| p.interface == lte && p.flags() & SYN != 0 && p.flags() & 0x10 == 0)
        .map(|p| (p.t_ns, p.src_port()))
        .collect();
    assert_eq!(syns.len(), 2, "{syns:?}");
    assert!(syns[0].0 < S && syns[1].0 >= 2 * S, "{syns:?}");
    assert_ne!(syns[0].1, syns[1].1, "the same 4-tuple twice");
    for (from, to, port) in [(0, S, syns[0].1), (2 * S, 4 * S, syns[1].1)] {
        let data = (packets.iter())
            .filter(|p| p.interface == lte && is_data(p) && (from..to).contains(&p.t_ns))
            .filter(|p| p.dst_port() == port)
            .count();
        assert!(data > 100, "{data} data packets to port {port}");
    }
}

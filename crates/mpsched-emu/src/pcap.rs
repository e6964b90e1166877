//! The kernels' packets as pcapng (`mpsched emulate --trace-headers`): every packet entering
//! an emulated link, its IP and TCP headers as the kernel wrote them (payload not kept),
//! stamped when the emulator read it. Each link thread keeps its own log; the logs are merged
//! in time order and written once the links stop, so the real-time loop never touches a file.

use mpsched_pcap::{Writer, LINKTYPE_IPV4};
use std::io::{self, Write};

/// Bytes kept of a packet that is not TCP over IPv4 (or whose headers are malformed).
const OTHER_SNAPLEN: usize = 64;
/// The most kept of any packet: the largest IPv4 header and the largest TCP header.
pub const SNAPLEN: usize = 60 + 60;

/// One link's packets: times, lengths and headers, in arrival order, at most `cap` of them.
#[derive(Clone, Debug, Default)]
pub struct PacketLog {
    cap: usize,
    t_abs: Vec<u64>,
    orig_len: Vec<u32>,
    /// Where each packet's headers end in `headers`.
    ends: Vec<u32>,
    headers: Vec<u8>,
    /// Packets not kept because the log was full.
    pub overflow: u64,
}

impl PacketLog {
    pub fn new(cap: usize) -> PacketLog {
        PacketLog {
            cap,
            ..PacketLog::default()
        }
    }

    /// Keeps the headers of `packet` (an IP packet), read at CLOCK_MONOTONIC `abs` ns.
    pub fn record(&mut self, abs: u64, packet: &[u8]) {
        if self.t_abs.len() >= self.cap {
            self.overflow += 1;
            return;
        }
        self.t_abs.push(abs);
        self.orig_len.push(packet.len() as u32);
        self.headers
            .extend_from_slice(&packet[..headers_len(packet)]);
        self.ends.push(self.headers.len() as u32);
    }

    pub fn len(&self) -> usize {
        self.t_abs.len()
    }

    pub fn is_empty(&self) -> bool {
        self.t_abs.is_empty()
    }

    fn packet(&self, i: usize) -> (u64, u32, &[u8]) {
        let start = if i == 0 { 0 } else { self.ends[i - 1] as usize };
        (
            self.t_abs[i],
            self.orig_len[i],
            &self.headers[start..self.ends[i] as usize],
        )
    }
}

/// How much of `packet` is headers: IPv4 and TCP headers, or a fixed prefix of anything else.
fn headers_len(packet: &[u8]) -> usize {
    let fallback = packet.len().min(OTHER_SNAPLEN);
    let Some(&first) = packet.first() else {
        return 0;
    };
    let ihl = usize::from(first & 0x0F) * 4;
    if first >> 4 != 4 || ihl < 20 || packet.len() < ihl + 20 || packet[9] != 6 {
        return fallback;
    }
    let doff = usize::from(packet[ihl + 12] >> 4) * 4;
    if doff < 20 || packet.len() < ihl + doff {
        return fallback;
    }
    ihl + doff
}

/// Writes `links` (interface name, log) as one pcapng stream, packets merged in time order,
/// stamped in ns since `zero` (CLOCK_MONOTONIC; earlier packets at 0). Returns the packets
/// written.
pub fn write<W: Write>(out: W, links: &[(String, &PacketLog)], zero: u64) -> io::Result<u64> {
    let mut w = Writer::new(
        out,
        "mpsched-emu",
        "kernel packets entering each emulated link",
    )?;
    for (name, _) in links {
        w.add_interface(name, LINKTYPE_IPV4, SNAPLEN as u32)?;
    }
    // Each log is in time order (one thread reads it); a merge of their heads is the capture.
    let mut order: Vec<(u64, u32, u32)> = links
        .iter()
        .enumerate()
        .flat_map(|(l, (_, log))| (0..log.len()).map(move |i| (log.t_abs[i], l as u32, i as u32)))
        .collect();
    order.sort_unstable();
    for &(_, l, i) in &order {
        let (t, len, headers) = links[l as usize].1.packet(i as usize);
        w.packet(l, t.saturating_sub(zero), len, headers)?;
    }
    w.flush()?;
    Ok(order.len() as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An IPv4/TCP packet with `opts` bytes of TCP options and `payload` bytes of data.
    fn tcp_packet(opts: usize, payload: usize) -> Vec<u8> {
        let doff = 20 + opts;
        let total = 20 + doff + payload;
        let mut p = vec![0u8; total];
        p[0] = 0x45;
        p[2..4].copy_from_slice(&(total as u16).to_be_bytes());
        p[9] = 6;
        p[20 + 12] = ((doff / 4) as u8) << 4;
        p
    }

    #[test]
    fn keeps_the_headers_and_the_length() {
        let mut log = PacketLog::new(2);
        log.record(5, &tcp_packet(12, 1448));
        log.record(7, &[0x60; 100]); // IPv6: a prefix
        log.record(9, &tcp_packet(0, 0)); // over the cap
        assert_eq!(log.len(), 2);
        assert_eq!(log.overflow, 1);
        assert_eq!(log.packet(0), (5, 1500, &tcp_packet(12, 1448)[..52]));
        assert_eq!(log.packet(1).2.len(), OTHER_SNAPLEN);
        // A TCP header claiming more than the packet holds is not trusted.
        let mut bad = tcp_packet(0, 0);
        bad[32] = 0xF0;
        assert_eq!(headers_len(&bad), 40);
        assert_eq!(headers_len(&[]), 0);
    }

    #[test]
    fn merges_the_links_in_time_order() {
        let (mut a, mut b) = (PacketLog::new(10), PacketLog::new(10));
        a.record(100, &tcp_packet(0, 10));
        a.record(300, &tcp_packet(0, 10));
        b.record(200, &tcp_packet(0, 0));
        let mut out = Vec::new();
        let links = [("a".to_string(), &a), ("b".to_string(), &b)];
        assert_eq!(write(&mut out, &links, 150).unwrap(), 3);
        // Enhanced packet blocks (type 6): interface, then the time.
        let mut times = vec![];
        let mut at = 0;
        while at < out.len() {
            let kind = u32::from_le_bytes(out[at..at + 4].try_into().unwrap());
            let len = u32::from_le_bytes(out[at + 4..at + 8].try_into().unwrap()) as usize;
            if kind == 6 {
                let b = &out[at + 8..];
                let iface = u32::from_le_bytes(b[..4].try_into().unwrap());
                let hi = u32::from_le_bytes(b[4..8].try_into().unwrap());
                let lo = u32::from_le_bytes(b[8..12].try_into().unwrap());
                times.push((iface, (u64::from(hi) << 32) | u64::from(lo)));
            }
            at += len;
        }
        assert_eq!(times, [(0, 0), (1, 50), (0, 150)]);
    }
}

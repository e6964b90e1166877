//! Reading the TCP and MPTCP headers of the packets that cross the links: on the up links the
//! window each ACK advertises (scaled by the factor its SYN announced), its cumulative ACK and
//! MPTCP Data ACK; on the down links each data segment's mapping (data sequence number and
//! length). This is how the kernel's receive window and sending are compared with the model's
//! traces; nothing the emulator forwards depends on it.
//!
//! Header layouts: IPv4 (RFC 791), TCP (RFC 9293 3.1), window scale (RFC 7323 2.2), MPTCP DSS
//! (RFC 8684 3.3: subtype 2, flags `A` = Data ACK present, `a` = Data ACK is 8 octets, `M` =
//! mapping present, `m` = data sequence number is 8 octets).

use std::collections::HashMap;

/// What one TCP segment of an IPv4 packet says about its sender's receive window.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Segment {
    pub src_port: u16,
    pub syn: bool,
    pub seq: u32,
    pub ack: u32,
    /// The 16-bit window field, unscaled.
    pub window: u16,
    /// The window scale option (SYN only).
    pub wscale: Option<u8>,
    /// The Data ACK of an MPTCP DSS option, and whether it had 8 octets.
    pub data_ack: Option<(u64, bool)>,
    /// The DSS mapping: data sequence number (and whether it had 8 octets), subflow sequence
    /// number (relative to the initial one) and data-level length.
    pub mapping: Option<Mapping>,
    pub payload_len: u32,
}

const OPT_END: u8 = 0;
const OPT_NOP: u8 = 1;
const OPT_WSCALE: u8 = 3;
use mpsched_pcap::mptcp::{DSS as MPTCP_DSS, DSS_A, DSS_A8, DSS_M, DSS_M8, KIND as OPT_MPTCP};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Mapping {
    pub dsn: u64,
    pub wide: bool,
    pub ssn: u32,
    pub len: u16,
}

impl Mapping {
    /// The data sequence number of the byte at subflow sequence number `seq` of a flow whose
    /// initial sequence number is `isn` (RFC 8684 3.3.1: the mapping's subflow sequence
    /// number is relative to it). One mapping covers a whole GSO segment, which leaves as
    /// several packets carrying the same option.
    pub fn dsn_at(&self, seq: u32, isn: u32) -> u64 {
        let offset = seq.wrapping_sub(isn).wrapping_sub(self.ssn) as u64;
        if self.wide {
            self.dsn.wrapping_add(offset)
        } else {
            (self.dsn + offset) & 0xFFFF_FFFF
        }
    }
}

/// Parses an IPv4 packet carrying TCP; `None` for anything else or a truncated header.
pub fn parse(ip: &[u8]) -> Option<Segment> {
    if ip.len() < 20 || ip[0] >> 4 != 4 || ip[9] != 6 {
        return None;
    }
    let ihl = (ip[0] & 0x0f) as usize * 4;
    let total = (u16::from_be_bytes([ip[2], ip[3]]) as usize).min(ip.len());
    let tcp = ip.get(ihl..total)?;
    if tcp.len() < 20 {
        return None;
    }
    let doff = (tcp[12] >> 4) as usize * 4;
    if doff < 20 || doff > tcp.len() {
        return None;
    }
    let mut seg = Segment {
        src_port: u16::from_be_bytes([tcp[0], tcp[1]]),
        syn: tcp[13] & 0x02 != 0,
        seq: u32::from_be_bytes([tcp[4], tcp[5], tcp[6], tcp[7]]),
        ack: u32::from_be_bytes([tcp[8], tcp[9], tcp[10], tcp[11]]),
        window: u16::from_be_bytes([tcp[14], tcp[15]]),
        wscale: None,
        data_ack: None,
        mapping: None,
        payload_len: (tcp.len() - doff) as u32,
    };
    let mut opts = &tcp[20..doff];
    while let Some(&kind) = opts.first() {
        match kind {
            OPT_END => break,
            OPT_NOP => {
                opts = &opts[1..];
                continue;
            }
            _ => {}
        }
        let len = *opts.get(1)? as usize;
        if len < 2 || len > opts.len() {
            return None;
        }
        let body = &opts[2..len];
        match kind {
            OPT_WSCALE if body.len() == 1 => seg.wscale = Some(body[0].min(14)),
            OPT_MPTCP if body.len() >= 2 && body[0] >> 4 == MPTCP_DSS => {
                let flags = body[1];
                let mut at = 2;
                let mut read = |n: usize| -> Option<u64> {
                    let b = body.get(at..at + n)?;
                    at += n;
                    Some(b.iter().fold(0u64, |v, &x| (v << 8) | x as u64))
                };
                if flags & DSS_A != 0 {
                    let wide = flags & DSS_A8 != 0;
                    seg.data_ack = Some((read(if wide { 8 } else { 4 })?, wide));
                }
                if flags & DSS_M != 0 {
                    let wide = flags & DSS_M8 != 0;
                    let dsn = read(if wide { 8 } else { 4 })?;
                    let ssn = read(4)? as u32;
                    let len = read(2)? as u16;
                    seg.mapping = Some(Mapping {
                        dsn,
                        wide,
                        ssn,
                        len,
                    });
                }
            }
            _ => {}
        }
        opts = &opts[len..];
    }
    Some(seg)
}

/// The headers of one direction, one row per TCP segment (at most `cap` rows).
#[derive(Clone, Debug, Default, serde::Serialize)]
pub struct HeaderTrace {
    /// When the segment entered the link, ns since the emulator's origin.
    pub t_ns: Vec<u64>,
    pub src_port: Vec<u16>,
    pub ack: Vec<u32>,
    /// Window in bytes: the field shifted by the scale of the sender's SYN (unscaled on SYNs).
    pub window_bytes: Vec<u64>,
    /// The Data ACK (low 32 bits when the option carried 4 octets); absent: `u64::MAX`.
    pub data_ack: Vec<u64>,
    pub data_ack_wide: Vec<bool>,
    /// The data sequence number of the segment's first byte, from its mapping (low 32 bits
    /// when the mapping had 4 octets); absent: `u64::MAX`.
    pub dsn: Vec<u64>,
    pub dsn_wide: Vec<bool>,
    pub payload_len: Vec<u32>,
    /// Segments not recorded because the trace was full.
    pub dropped_rows: u64,
    #[serde(skip)]
    cap: usize,
    #[serde(skip)]
    wscale: HashMap<u16, u8>,
    /// Initial sequence number per flow (its SYN's), for the data sequence number of each
    /// packet.
    #[serde(skip)]
    isn: HashMap<u16, u32>,
}

impl HeaderTrace {
    pub fn new(cap: usize) -> HeaderTrace {
        HeaderTrace {
            cap,
            ..Default::default()
        }
    }

    pub fn record(&mut self, t_ns: u64, ip: &[u8]) {
        let Some(seg) = parse(ip) else { return };
        if seg.syn {
            // RFC 7323 2.2: the scale applies to every later segment of this connection.
            self.wscale.insert(seg.src_port, seg.wscale.unwrap_or(0));
            self.isn.insert(seg.src_port, seg.seq);
        }
        if self.t_ns.len() >= self.cap {
            self.dropped_rows += 1;
            return;
        }
        let shift = if seg.syn {
            0
        } else {
            self.wscale.get(&seg.src_port).copied().unwrap_or(0)
        };
        self.t_ns.push(t_ns);
        self.src_port.push(seg.src_port);
        self.ack.push(seg.ack);
        self.window_bytes.push((seg.window as u64) << shift);
        let (da, wide) = seg.data_ack.unwrap_or((u64::MAX, false));
        self.data_ack.push(da);
        self.data_ack_wide.push(wide);
        let isn = self.isn.get(&seg.src_port).copied();
        match (seg.mapping, isn) {
            (Some(m), Some(isn)) => {
                self.dsn.push(m.dsn_at(seg.seq, isn));
                self.dsn_wide.push(m.wide);
            }
            _ => {
                self.dsn.push(u64::MAX);
                self.dsn_wide.push(false);
            }
        }
        self.payload_len.push(seg.payload_len);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An IPv4 + TCP packet with the given TCP options and payload length.
    fn packet(flags: u8, window: u16, opts: &[u8], payload: usize) -> Vec<u8> {
        assert_eq!(opts.len() % 4, 0);
        let tcp_len = 20 + opts.len();
        let total = 20 + tcp_len + payload;
        let mut p = vec![0u8; total];
        p[0] = 0x45;
        p[2..4].copy_from_slice(&(total as u16).to_be_bytes());
        p[9] = 6;
        let t = &mut p[20..];
        t[0..2].copy_from_slice(&40000u16.to_be_bytes());
        t[4..8].copy_from_slice(&7u32.to_be_bytes());
        t[8..12].copy_from_slice(&7u32.to_be_bytes());
        t[12] = ((tcp_len / 4) as u8) << 4;
        t[13] = flags;
        t[14..16].copy_from_slice(&window.to_be_bytes());
        t[20..20 + opts.len()].copy_from_slice(opts);
        p
    }

    #[test]
    fn reads_the_scale_from_the_syn_and_applies_it_afterwards() {
        let mut tr = HeaderTrace::new(10);
        // SYN: MSS, NOP, window scale 7.
        tr.record(1, &packet(0x02, 64240, &[2, 4, 5, 0xb4, 1, 3, 3, 7], 0));
        // ACK with a DSS option: flags A|a, 8-octet Data ACK 0x0102030405060708.
        let dss = [30, 12, 0x20, 0x03, 1, 2, 3, 4, 5, 6, 7, 8];
        tr.record(2, &packet(0x10, 1000, &dss, 0));
        assert_eq!(tr.window_bytes, vec![64240, 1000 << 7]);
        assert_eq!(tr.data_ack, vec![u64::MAX, 0x0102030405060708]);
        assert_eq!(tr.data_ack_wide, vec![false, true]);
        assert_eq!(tr.ack, vec![7, 7]);
    }

    #[test]
    fn a_data_segment_s_mapping() {
        // DSS with a 4-octet Data ACK and an 8-octet mapping: A | M | m, 4 + 4 + 8 + 4 + 2
        // (+2 padding) bytes.
        let dss = [
            30, 22, 0x20, 0x0d, 0, 0, 0, 9, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 5, 0x90, 0, 0,
        ];
        let seg = parse(&packet(0x10, 9, &dss, 1424)).unwrap();
        assert_eq!(seg.data_ack, Some((9, false)));
        let m = seg.mapping.unwrap();
        assert_eq!((m.dsn, m.wide, m.ssn, m.len), (256, true, 1, 0x0590));
        assert_eq!(seg.payload_len, 1424);
        // The packet's subflow sequence number is 7 (test packets); with an initial one of 5
        // it is the mapping's second byte on: data sequence number 257.
        assert_eq!(m.dsn_at(seg.seq, 5), 257);
        assert_eq!(m.dsn_at(seg.seq.wrapping_add(1000), 5), 1257);
    }

    #[test]
    fn a_short_data_ack_and_a_full_trace() {
        let mut tr = HeaderTrace::new(1);
        let dss = [30, 8, 0x20, 0x01, 0, 0, 1, 0];
        tr.record(5, &packet(0x10, 9, &dss, 100));
        tr.record(6, &packet(0x10, 9, &dss, 100));
        assert_eq!(tr.data_ack, vec![256]);
        assert_eq!(tr.dropped_rows, 1);
        assert_eq!(parse(&packet(0x10, 9, &dss, 100)).unwrap().payload_len, 100);
    }

    #[test]
    fn refuses_what_is_not_tcp_over_ipv4() {
        let mut p = packet(0x10, 1, &[], 0);
        assert!(parse(&p).is_some());
        p[9] = 17;
        assert!(parse(&p).is_none());
        assert!(parse(&[0x60; 40]).is_none());
        // An option whose length runs past the header.
        assert!(parse(&packet(0x10, 1, &[3, 9, 0, 0], 0)).is_none());
    }
}

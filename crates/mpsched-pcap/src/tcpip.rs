//! IPv4 and TCP headers (RFC 791, RFC 9293) with the options a Linux MPTCP connection
//! carries: MSS, window scale, SACK (RFC 2018), timestamps (RFC 7323) and MPTCP (RFC 8684).
//! Only the headers are encoded: the payload is counted in the lengths and checksums (as
//! zeros) but not written, as a capture with a small snap length keeps it.

use crate::mptcp::MptcpOption;
use std::net::Ipv4Addr;

pub const FIN: u8 = 0x01;
pub const SYN: u8 = 0x02;
pub const PSH: u8 = 0x08;
pub const ACK: u8 = 0x10;

/// The most option bytes a TCP header holds (data offset 15 words).
pub const MAX_OPTIONS: usize = 40;

/// A TCP option (kinds from the IANA registry).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TcpOption {
    Mss(u16),
    WindowScale(u8),
    SackPermitted,
    /// TSval, TSecr.
    Timestamps(u32, u32),
    /// (left edge, right edge) of up to four blocks.
    Sack(Vec<(u32, u32)>),
    Mptcp(MptcpOption),
}

impl TcpOption {
    fn encode(&self, out: &mut Vec<u8>) {
        match self {
            TcpOption::Mss(mss) => {
                out.extend_from_slice(&[2, 4]);
                out.extend_from_slice(&mss.to_be_bytes());
            }
            TcpOption::WindowScale(shift) => out.extend_from_slice(&[1, 3, 3, *shift]),
            TcpOption::SackPermitted => out.extend_from_slice(&[4, 2]),
            TcpOption::Timestamps(val, ecr) => {
                // Aligned as Linux sends it: NOP, NOP, kind, length.
                out.extend_from_slice(&[1, 1, 8, 10]);
                out.extend_from_slice(&val.to_be_bytes());
                out.extend_from_slice(&ecr.to_be_bytes());
            }
            TcpOption::Sack(blocks) => {
                out.extend_from_slice(&[1, 1, 5, 2 + 8 * blocks.len() as u8]);
                for (l, r) in blocks {
                    out.extend_from_slice(&l.to_be_bytes());
                    out.extend_from_slice(&r.to_be_bytes());
                }
            }
            TcpOption::Mptcp(m) => m.encode(out),
        }
    }
}

/// One TCP segment in an IPv4 packet.
#[derive(Clone, Debug)]
pub struct Segment {
    pub src: Ipv4Addr,
    pub dst: Ipv4Addr,
    pub ip_id: u16,
    pub src_port: u16,
    pub dst_port: u16,
    pub seq: u32,
    pub ack: u32,
    pub flags: u8,
    pub window: u16,
    pub options: Vec<TcpOption>,
    /// Payload bytes (not captured).
    pub payload_len: u32,
}

impl Segment {
    /// Appends the IPv4 and TCP headers to `out`; returns the packet's length on the wire.
    pub fn encode(&self, out: &mut Vec<u8>) -> u32 {
        let ip_at = out.len();
        let mut opts = Vec::with_capacity(MAX_OPTIONS);
        let mut options = self.options.iter().peekable();
        while let Some(o) = options.next() {
            // A SYN's SACK-permitted and timestamps share one word pair, without the NOPs
            // (Linux `tcp_options_write`): its SYN is 60 bytes, not 64.
            if let (TcpOption::SackPermitted, Some(TcpOption::Timestamps(val, ecr))) =
                (o, options.peek())
            {
                opts.extend_from_slice(&[4, 2, 8, 10]);
                opts.extend_from_slice(&val.to_be_bytes());
                opts.extend_from_slice(&ecr.to_be_bytes());
                options.next();
                continue;
            }
            o.encode(&mut opts);
        }
        // End-of-options padding to a whole word.
        opts.resize(opts.len().next_multiple_of(4), 0);
        assert!(
            opts.len() <= MAX_OPTIONS,
            "TCP options of {} bytes",
            opts.len()
        );
        let tcp_len = 20 + opts.len();
        let total = 20 + tcp_len as u32 + self.payload_len;
        assert!(
            total <= u32::from(u16::MAX),
            "an IPv4 packet of {total} bytes"
        );

        // IPv4: version 4, 5 words; DF; TTL 64; protocol 6.
        out.extend_from_slice(&[0x45, 0]);
        out.extend_from_slice(&(total as u16).to_be_bytes());
        out.extend_from_slice(&self.ip_id.to_be_bytes());
        out.extend_from_slice(&[0x40, 0, 64, 6, 0, 0]);
        out.extend_from_slice(&self.src.octets());
        out.extend_from_slice(&self.dst.octets());
        let ip_sum = checksum(0, &out[ip_at..ip_at + 20]);
        out[ip_at + 10..ip_at + 12].copy_from_slice(&ip_sum.to_be_bytes());

        let tcp_at = out.len();
        out.extend_from_slice(&self.src_port.to_be_bytes());
        out.extend_from_slice(&self.dst_port.to_be_bytes());
        out.extend_from_slice(&self.seq.to_be_bytes());
        out.extend_from_slice(&self.ack.to_be_bytes());
        out.push(((tcp_len / 4) as u8) << 4);
        out.push(self.flags);
        out.extend_from_slice(&self.window.to_be_bytes());
        out.extend_from_slice(&[0, 0, 0, 0]);
        out.extend_from_slice(&opts);
        // The pseudo-header, then the header; a payload of zeros adds nothing to the sum.
        let mut pseudo = [0u8; 12];
        pseudo[..4].copy_from_slice(&self.src.octets());
        pseudo[4..8].copy_from_slice(&self.dst.octets());
        pseudo[9] = 6;
        pseudo[10..].copy_from_slice(&((tcp_len as u32 + self.payload_len) as u16).to_be_bytes());
        let sum = checksum(partial(0, &pseudo), &out[tcp_at..]);
        out[tcp_at + 16..tcp_at + 18].copy_from_slice(&sum.to_be_bytes());
        total
    }
}

/// The ones'-complement sum of 16-bit words (RFC 1071), not yet folded.
fn partial(mut sum: u32, bytes: &[u8]) -> u32 {
    let mut chunks = bytes.chunks_exact(2);
    for c in &mut chunks {
        sum += u32::from(u16::from_be_bytes([c[0], c[1]]));
    }
    if let [last] = chunks.remainder() {
        sum += u32::from(*last) << 8;
    }
    sum
}

/// The Internet checksum of `bytes` after a partial sum `start`.
fn checksum(start: u32, bytes: &[u8]) -> u16 {
    let mut sum = partial(start, bytes);
    while sum > 0xFFFF {
        sum = (sum & 0xFFFF) + (sum >> 16);
    }
    !(sum as u16)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn segment() -> Segment {
        Segment {
            src: Ipv4Addr::new(10, 20, 0, 1),
            dst: Ipv4Addr::new(10, 10, 0, 2),
            ip_id: 7,
            src_port: 5201,
            dst_port: 40000,
            seq: 1000,
            ack: 2000,
            flags: ACK,
            window: 502,
            options: vec![
                TcpOption::Timestamps(1, 2),
                TcpOption::Sack(vec![(10, 20), (30, 40)]),
            ],
            payload_len: 0,
        }
    }

    #[test]
    fn a_syn_is_laid_out_as_linux_writes_it() {
        let mut syn = segment();
        syn.flags = SYN;
        syn.options = vec![
            TcpOption::Mss(1460),
            TcpOption::SackPermitted,
            TcpOption::Timestamps(1, 0),
            TcpOption::WindowScale(7),
        ];
        let mut out = vec![];
        // MSS (4), SACK-permitted and timestamps in three words (12), NOP and window scale (4).
        assert_eq!(syn.encode(&mut out), 60);
        assert_eq!(&out[40..48], &[2, 4, 5, 180, 4, 2, 8, 10]);
        assert_eq!(&out[56..60], &[1, 3, 3, 7]);
    }

    #[test]
    fn a_header_checksums_to_zero_and_says_its_lengths() {
        let mut out = vec![];
        let total = segment().encode(&mut out);
        // 20 IP + 20 TCP + 12 timestamps + 20 SACK (two blocks).
        assert_eq!(total, 72);
        assert_eq!(out.len(), 72);
        assert_eq!(u16::from_be_bytes([out[2], out[3]]), 72);
        assert_eq!(out[32] >> 4, 13);
        // A header with its checksum in place sums to zero (RFC 1071).
        assert_eq!(checksum(0, &out[..20]), 0);
        let mut pseudo = [0u8; 12];
        pseudo[..4].copy_from_slice(&out[12..16]);
        pseudo[4..8].copy_from_slice(&out[16..20]);
        pseudo[9] = 6;
        pseudo[10..].copy_from_slice(&52u16.to_be_bytes());
        assert_eq!(checksum(partial(0, &pseudo), &out[20..]), 0);
    }

    #[test]
    fn the_payload_counts_in_the_lengths_but_is_not_written() {
        let mut s = segment();
        s.options = vec![TcpOption::Timestamps(1, 2)];
        s.payload_len = 1448;
        let mut out = vec![];
        assert_eq!(s.encode(&mut out), 1500);
        assert_eq!(out.len(), 52);
        assert_eq!(u16::from_be_bytes([out[2], out[3]]), 1500);
    }

    #[test]
    fn rfc_1071_example() {
        // RFC 1071 sec. 3: the words 0001 f203 f4f5 f6f7 sum to ddf2 (folded).
        let sum = checksum(0, &[0x00, 0x01, 0xf2, 0x03, 0xf4, 0xf5, 0xf6, 0xf7]);
        assert_eq!(sum, !0xddf2);
    }
}

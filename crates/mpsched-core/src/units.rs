//! Sizes and rates. Sequence space inside the model counts segments (as Linux's cwnd and
//! scoreboard count skbs); `Bytes` is for buffers, payloads and wire sizes.

use crate::time::Dur;
use std::ops::{Add, AddAssign, Sub, SubAssign};

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Bytes(pub u64);

impl Add for Bytes {
    type Output = Bytes;
    fn add(self, b: Bytes) -> Bytes {
        Bytes(self.0 + b.0)
    }
}
impl AddAssign for Bytes {
    fn add_assign(&mut self, b: Bytes) {
        self.0 += b.0;
    }
}
impl Sub for Bytes {
    type Output = Bytes;
    fn sub(self, b: Bytes) -> Bytes {
        Bytes(self.0.saturating_sub(b.0))
    }
}
impl SubAssign for Bytes {
    fn sub_assign(&mut self, b: Bytes) {
        self.0 = self.0.saturating_sub(b.0);
    }
}

/// A link rate in bits per second.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Rate {
    pub bps: u64,
}

impl Rate {
    pub const fn bps(bps: u64) -> Rate {
        Rate { bps }
    }
    pub const fn mbps(m: u64) -> Rate {
        Rate { bps: m * 1_000_000 }
    }
    /// Time to serialize `bytes` at this rate, rounded up to the next nanosecond so that a
    /// link never runs faster than configured.
    pub fn tx_time(self, bytes: u64) -> Dur {
        let bits = bytes as u128 * 8 * 1_000_000_000;
        Dur(bits.div_ceil(self.bps as u128) as u64)
    }
    /// Bytes this rate carries in `d` (the bandwidth-delay product).
    pub fn bytes_in(self, d: Dur) -> u64 {
        (self.bps as u128 * d.0 as u128 / 8 / 1_000_000_000) as u64
    }
}

/// Wire and payload sizes of the modelled TCP/IP packets.
///
/// A full data packet is 1500 bytes on the wire: 20 (IPv4) + 20 (TCP) + 12 (timestamps
/// option, RFC 7323) header bytes and an MSS of 1448 payload bytes. An MPTCP data segment also
/// carries a DSS option within the same 1500 bytes, so it holds less payload (`MPTCP_MSS`).
pub mod wire {
    /// The TCP MSS (Linux `mss_cache` on a 1500-byte-MTU path with timestamps): also what
    /// Linux multiplies cwnd by for the pacing and delivery rates of MPTCP subflows.
    pub const MSS: u32 = 1448;
    pub const HEADER: u32 = 52;
    pub const MTU: u32 = MSS + HEADER;
    /// RFC 8684 3.3 DSS option of an upstream Linux data segment: a 64-bit data sequence
    /// mapping (8 + 4 + 2 bytes), a 32-bit Data ACK and the 4-byte option header, 22 bytes
    /// padded to 24 (`mptcp_established_options_dss`).
    pub const DSS_MAPPING: u32 = 24;
    /// Payload of a full MPTCP data segment: 1,448 - 24. `mpsched emulate` measures 1,424
    /// bytes of payload per 1,500-byte packet on this machine's kernel (`payload_per_packet`).
    pub const MPTCP_MSS: u32 = MSS - DSS_MAPPING;

    /// Payload bytes of a full data segment.
    pub const fn mss(mptcp: bool) -> u32 {
        if mptcp {
            MPTCP_MSS
        } else {
            MSS
        }
    }
    /// Header bytes of a data packet (IP, TCP, timestamps, and the DSS option for MPTCP).
    pub const fn data_header(mptcp: bool) -> u32 {
        if mptcp {
            HEADER + DSS_MAPPING
        } else {
            HEADER
        }
    }
    /// A pure ACK: IP + TCP + timestamps.
    pub const ACK: u32 = HEADER;
    /// Each SACK block costs 8 bytes plus 2 bytes of kind/length (padded to 4).
    pub fn sack_option(blocks: usize) -> u32 {
        if blocks == 0 {
            0
        } else {
            (2 + 8 * blocks as u32).next_multiple_of(4)
        }
    }
    /// RFC 8684 DSS option carrying a 64-bit Data ACK (3.3): 4 + 8 bytes.
    pub const DSS_DATA_ACK: u32 = 12;
    /// SACK blocks an ACK has room for. TCP options hold 40 bytes; the timestamps take 12 and,
    /// on an MPTCP subflow, the Data ACK 12 more, which Linux places first ("MPTCP options
    /// have precedence over SACK", `tcp_established_options`); SACK gets what is left, 4
    /// bytes of kind and length (NOP-aligned) and 8 per block: 3 blocks for TCP, 1 for MPTCP.
    pub const fn sack_blocks_fit(mptcp: bool) -> usize {
        let used = HEADER - 40 + if mptcp { DSS_DATA_ACK } else { 0 };
        ((40 - used - 4) / 8) as usize
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tx_time_of_a_full_packet_at_30mbps() {
        // 1500 B x 8 / 30e6 = 400 us exactly.
        assert_eq!(Rate::mbps(30).tx_time(1500), Dur::from_micros(400));
        // Rounds up: 1 byte at 3 bit/s = 2.666..s -> 2666666667 ns.
        assert_eq!(Rate::bps(3).tx_time(1), Dur(2_666_666_667));
    }

    #[test]
    fn bdp() {
        assert_eq!(Rate::mbps(30).bytes_in(Dur::from_millis(40)), 150_000);
    }

    #[test]
    fn every_full_data_packet_is_1500_bytes() {
        for mptcp in [false, true] {
            assert_eq!(wire::mss(mptcp) + wire::data_header(mptcp), 1500);
        }
        assert_eq!(wire::mss(true), 1424);
    }

    #[test]
    fn an_ack_with_every_sack_block_it_holds_fills_the_60_byte_tcp_header() {
        assert_eq!(wire::sack_blocks_fit(false), 3);
        assert_eq!(wire::sack_blocks_fit(true), 1);
        for mptcp in [false, true] {
            let dss = if mptcp { wire::DSS_DATA_ACK } else { 0 };
            let n = wire::sack_blocks_fit(mptcp);
            let tcp_header = wire::ACK - 20 + wire::sack_option(n) + dss;
            assert!(tcp_header <= 60, "{tcp_header}");
            assert!(tcp_header + 8 > 60, "room for one more block");
        }
    }

    #[test]
    fn sack_option_sizes() {
        assert_eq!(wire::sack_option(1), 12);
        assert_eq!(wire::sack_option(3), 28);
    }
}

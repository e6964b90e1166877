//! The packets that cross the modelled links.
//!
//! Data flows server -> client; ACKs flow back. Subflow sequence numbers count segments (one
//! segment per packet, as the kernel's scoreboard counts skbs); each data segment carries its
//! mapping to the connection-level data sequence space (RFC 8684 3.3.1), also in segments.

use crate::time::Time;
use crate::units::wire;

/// At most 3 SACK blocks fit beside the timestamps option (RFC 2018 3, RFC 7323).
pub const MAX_SACK_BLOCKS: usize = 3;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SackBlock {
    /// First segment of the block.
    pub start: u64,
    /// One past the last segment.
    pub end: u64,
}

#[derive(Clone, Copy, Debug)]
pub struct DataSeg {
    /// Subflow sequence number (segments).
    pub seq: u64,
    /// Data sequence number (connection-level segment index).
    pub dseq: u64,
    /// Payload bytes (the MSS except for the last segment of a file).
    pub len: u32,
    /// TSval (RFC 7323): the send time.
    pub ts_val: Time,
    /// TSecr: the TSval of the peer's latest ACK, from which the receiver measures its RTT
    /// (Linux `tcp_rcv_rtt_measure_ts`).
    pub ts_ecr: Time,
    /// A window probe: sent beyond the advertised window to elicit an ACK.
    pub probe: bool,
}

#[derive(Clone, Copy, Debug)]
pub struct Ack {
    /// Cumulative subflow ACK: the next expected subflow segment.
    pub ack: u64,
    pub sack: [SackBlock; MAX_SACK_BLOCKS],
    pub sack_len: u8,
    /// Cumulative Data ACK (RFC 8684 3.3.2), in data segments.
    pub data_ack: u64,
    /// Receive window in bytes, relative to the Data ACK (RFC 8684 3.3.4).
    pub rwnd: u64,
    /// TSval: the receiver's clock when it sent the ACK.
    pub ts_val: Time,
    /// TSecr (RFC 7323 4.3).
    pub ts_ecr: Time,
    /// The ACK reports a duplicate segment (RFC 2883 D-SACK; the block itself is not
    /// modelled, only that there is one).
    pub dsack: bool,
}

impl Ack {
    pub fn sack_blocks(&self) -> &[SackBlock] {
        &self.sack[..self.sack_len as usize]
    }
}

#[derive(Clone, Copy, Debug)]
pub enum Payload {
    Data(DataSeg),
    Ack(Ack),
}

#[derive(Clone, Copy, Debug)]
pub struct Packet {
    /// Index of the subflow (and so of the path) this packet belongs to.
    pub subflow: u8,
    /// Which incarnation of that subflow: a subflow closed (its address removed) and opened
    /// again on the same path is a new TCP connection, and its packets must not be taken
    /// for the old one's (nor the old one's, still on the wire, for its own).
    pub gen: u8,
    /// Bytes on the wire (headers included); what the links serialize.
    pub wire_len: u32,
    pub payload: Payload,
}

impl Packet {
    pub fn data(subflow: u8, seg: DataSeg, mptcp: bool) -> Packet {
        Packet {
            subflow,
            gen: 0,
            wire_len: seg.len + wire::data_header(mptcp),
            payload: Payload::Data(seg),
        }
    }

    /// The packet, of incarnation `gen` of its subflow.
    pub fn of_gen(mut self, gen: u8) -> Packet {
        self.gen = gen;
        self
    }

    pub fn ack(subflow: u8, ack: Ack, mptcp: bool) -> Packet {
        let dss = if mptcp { wire::DSS_DATA_ACK } else { 0 };
        Packet {
            subflow,
            gen: 0,
            wire_len: wire::ACK + wire::sack_option(ack.sack_len as usize) + dss,
            payload: Payload::Ack(ack),
        }
    }
}

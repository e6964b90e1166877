//! The core's packets as frames and back. The wire carries the low 32 bits of sequence numbers
//! and microsecond timestamps; each side restores them beside what it last knew (`wire::expand`).
//! A timestamp is always in its sender's clock: a side's own values come back to it in
//! `ts_ecr` and are restored beside its own clock; the peer's are only ever echoed.

use crate::wire::{expand, Frame, Part, SackBlock as WireSack, MAX_SACK};
use mpsched_core::packet::{Ack, DataSeg, Packet, Payload, SackBlock, MAX_SACK_BLOCKS};
use mpsched_core::Time;

/// A time as microseconds, low 32 bits.
pub fn us(t: Time) -> u32 {
    (t.0 / 1_000) as u32
}

/// Microseconds restored beside `near`.
pub fn from_us(v: u32, near: Time) -> Time {
    Time(expand(v, near.0 / 1_000) * 1_000)
}

/// A data segment's frame; `payload` holds its bytes.
pub fn data_frame<'a>(pkt: &Packet, seg: &DataSeg, payload: &'a [u8]) -> Frame<'a> {
    Frame::Data {
        subflow: pkt.subflow,
        gen: pkt.gen,
        probe: seg.probe,
        part: Part::Whole,
        seq: seg.seq as u32,
        dseq: seg.dseq as u32,
        ts_val: us(seg.ts_val),
        ts_ecr: us(seg.ts_ecr),
        payload,
    }
}

/// An ACK's frame.
pub fn ack_frame(pkt: &Packet, ack: &Ack) -> Frame<'static> {
    let mut sack = [WireSack::default(); MAX_SACK];
    let n = ack.sack_blocks().len().min(MAX_SACK);
    for (w, b) in sack.iter_mut().zip(ack.sack_blocks()) {
        *w = WireSack {
            start: b.start as u32,
            end: b.end as u32,
        };
    }
    Frame::Ack {
        subflow: pkt.subflow,
        gen: pkt.gen,
        dsack: ack.dsack,
        ack: ack.ack as u32,
        data_ack: ack.data_ack as u32,
        rwnd: ack.rwnd.min(u64::from(u32::MAX)) as u32,
        ts_val: us(ack.ts_val),
        ts_ecr: us(ack.ts_ecr),
        sack_len: n as u8,
        sack,
    }
}

/// What the sender knows to restore an ACK's fields beside.
pub struct AckContext {
    pub snd_una: u64,
    pub data_una: u64,
    pub now: Time,
    pub peer_ts: Time,
}

/// The core's ACK of an ACK frame (`None` for other frames).
pub fn ack_packet(frame: &Frame, cx: &AckContext, wire_len: u32) -> Option<Packet> {
    let Frame::Ack {
        subflow,
        gen,
        dsack,
        ack,
        data_ack,
        rwnd,
        ts_val,
        ts_ecr,
        sack_len,
        sack,
    } = *frame
    else {
        return None;
    };
    let mut blocks = [SackBlock { start: 0, end: 0 }; MAX_SACK_BLOCKS];
    let n = usize::from(sack_len).min(MAX_SACK_BLOCKS);
    for (b, w) in blocks.iter_mut().zip(&sack[..n]) {
        *b = SackBlock {
            start: expand(w.start, cx.snd_una),
            end: expand(w.end, cx.snd_una),
        };
    }
    Some(Packet {
        subflow,
        gen,
        wire_len,
        payload: Payload::Ack(Ack {
            ack: expand(ack, cx.snd_una),
            sack: blocks,
            sack_len: n as u8,
            data_ack: expand(data_ack, cx.data_una),
            rwnd: u64::from(rwnd),
            ts_val: from_us(ts_val, cx.peer_ts),
            ts_ecr: from_us(ts_ecr, cx.now),
            dsack,
        }),
    })
}

/// What the receiver knows to restore a data frame's fields beside.
pub struct DataContext {
    pub rcv_nxt: u64,
    pub data_rcv_nxt: u64,
    pub now: Time,
    pub peer_ts: Time,
}

/// The core's data segment of a data frame (`None` for other frames).
pub fn data_packet(frame: &Frame, cx: &DataContext, wire_len: u32) -> Option<Packet> {
    let Frame::Data {
        subflow,
        gen,
        probe,
        seq,
        dseq,
        ts_val,
        ts_ecr,
        payload,
        ..
    } = *frame
    else {
        return None;
    };
    Some(Packet {
        subflow,
        gen,
        wire_len,
        payload: Payload::Data(DataSeg {
            seq: expand(seq, cx.rcv_nxt),
            dseq: expand(dseq, cx.data_rcv_nxt),
            len: payload.len() as u32,
            ts_val: from_us(ts_val, cx.peer_ts),
            ts_ecr: from_us(ts_ecr, cx.now),
            probe,
        }),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use mpsched_core::Dur;

    #[test]
    fn an_ack_crosses_the_wire_whole_far_into_a_transfer() {
        let far = 5u64 << 32;
        let now = Time::ZERO + Dur::from_secs(5_000); // past the 32-bit microsecond wrap
        let mut sack = [SackBlock { start: 0, end: 0 }; MAX_SACK_BLOCKS];
        sack[0] = SackBlock {
            start: far + 10,
            end: far + 20,
        };
        let ack = Ack {
            ack: far + 3,
            sack,
            sack_len: 1,
            data_ack: far + 7,
            rwnd: 6 << 20,
            ts_val: Time(1_234_000),
            ts_ecr: Time(now.0 - Dur::from_millis(30).0),
            dsack: true,
        };
        let pkt = Packet {
            subflow: 1,
            gen: 0,
            wire_len: 0,
            payload: Payload::Ack(ack),
        };
        let f = ack_frame(&pkt, &ack);
        let cx = AckContext {
            snd_una: far,
            data_una: far + 5,
            now,
            peer_ts: Time(1_000_000),
        };
        let back = ack_packet(&f, &cx, 0).unwrap();
        let Payload::Ack(b) = back.payload else {
            panic!()
        };
        assert_eq!(
            (b.ack, b.data_ack, b.rwnd, b.dsack),
            (far + 3, far + 7, 6 << 20, true)
        );
        assert_eq!(b.sack_blocks(), ack.sack_blocks());
        assert_eq!((b.ts_val, b.ts_ecr), (ack.ts_val, ack.ts_ecr));
    }
}

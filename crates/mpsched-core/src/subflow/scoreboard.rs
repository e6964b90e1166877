//! The sender's SACK scoreboard (RFC 6675, Linux's retransmission queue with its `sacked`
//! tags): every outstanding segment, which are SACKed, deemed lost or being retransmitted,
//! and the counts the pipe is computed from.

use crate::packet::{SackBlock, MAX_SACK_BLOCKS};
use crate::subflow::rate::Stamp;
use crate::time::Time;
use std::collections::VecDeque;

/// Linux `tcp_reordering` (RFC 6675 DupThresh): with this many segments SACKed, RACK needs
/// no reordering window, and the classic recovery deems a hole lost.
pub const DUP_THRESH: u32 = 3;

#[derive(Clone, Copy, Debug)]
pub struct TxSeg {
    pub dseq: u64,
    pub len: u32,
    /// Last transmission time.
    pub sent_at: Time,
    pub sacked: bool,
    pub lost: bool,
    /// A retransmission of this segment is in flight (counted in `retrans_out`).
    pub retrans: bool,
    pub ever_retrans: bool,
    /// The delivery-rate stamp of its last transmission.
    pub stamp: Stamp,
}

/// Sequence numbers count segments (one per packet).
pub struct Scoreboard {
    snd_una: u64,
    snd_nxt: u64,
    segs: VecDeque<TxSeg>,
    sacked_out: u32,
    lost_out: u32,
    retrans_out: u32,
    /// The previous ACK's SACK blocks as tagged (clipped to what was outstanding). Tags are
    /// never taken back, so a block seen again is skipped, as Linux skips what its
    /// `recv_sack_cache` says was processed: a long block repeated in every ACK costs nothing.
    sack_cache: [SackBlock; MAX_SACK_BLOCKS],
    sack_cache_len: usize,
    /// No lost, unretransmitted segment lies below this.
    retransmit_hint: u64,
}

impl Default for Scoreboard {
    fn default() -> Scoreboard {
        Scoreboard {
            snd_una: 0,
            snd_nxt: 0,
            segs: VecDeque::new(),
            sacked_out: 0,
            lost_out: 0,
            retrans_out: 0,
            sack_cache: [SackBlock { start: 0, end: 0 }; MAX_SACK_BLOCKS],
            sack_cache_len: 0,
            retransmit_hint: 0,
        }
    }
}

impl Scoreboard {
    #[inline]
    pub fn snd_una(&self) -> u64 {
        self.snd_una
    }
    #[inline]
    pub fn snd_nxt(&self) -> u64 {
        self.snd_nxt
    }
    #[inline]
    pub fn packets_out(&self) -> u32 {
        (self.snd_nxt - self.snd_una) as u32
    }
    #[inline]
    pub fn sacked_out(&self) -> u32 {
        self.sacked_out
    }
    #[inline]
    pub fn lost_out(&self) -> u32 {
        self.lost_out
    }
    #[inline]
    pub fn retrans_out(&self) -> u32 {
        self.retrans_out
    }
    /// RFC 6675 pipe / Linux `tcp_packets_in_flight`.
    #[inline]
    pub fn in_flight(&self) -> u32 {
        self.packets_out() - (self.sacked_out + self.lost_out) + self.retrans_out
    }

    /// Outstanding segment `seq` (which must be outstanding).
    #[inline]
    pub fn at(&self, seq: u64) -> &TxSeg {
        &self.segs[(seq - self.snd_una) as usize]
    }
    #[inline]
    fn at_mut(&mut self, seq: u64) -> &mut TxSeg {
        &mut self.segs[(seq - self.snd_una) as usize]
    }
    pub fn seg(&self, seq: u64) -> Option<&TxSeg> {
        seq.checked_sub(self.snd_una)
            .and_then(|i| self.segs.get(i as usize))
    }
    /// Outstanding segments, oldest first, with their subflow sequence numbers.
    pub fn outstanding(&self) -> impl Iterator<Item = (u64, &TxSeg)> {
        (self.snd_una..).zip(self.segs.iter())
    }
    /// Whether `dseq` is outstanding here and not yet delivered to the peer.
    pub fn holds_unacked(&self, dseq: u64) -> bool {
        self.segs.iter().any(|s| s.dseq == dseq && !s.sacked)
    }

    /// A new segment goes out; its sequence number.
    pub fn push(&mut self, seg: TxSeg) -> u64 {
        self.segs.push_back(seg);
        self.snd_nxt += 1;
        self.snd_nxt - 1
    }

    /// Segment `seq` goes out again: it counts as a retransmission in flight (once, however
    /// often it is resent), and its transmission time and stamp are renewed. Whether it was
    /// not in flight as a retransmission before.
    pub fn resend(&mut self, seq: u64, now: Time, stamp: Stamp) -> bool {
        let s = self.at_mut(seq);
        if s.sacked {
            // A loss probe resends the last segment even if it was SACKed meanwhile
            // (`tcp_send_loss_probe`); delivered, it is not in flight again.
            s.ever_retrans = true;
            return false;
        }
        let newly = !s.retrans;
        s.retrans = true;
        s.ever_retrans = true;
        s.sent_at = now;
        s.stamp = stamp;
        if newly {
            self.retrans_out += 1;
        }
        newly
    }

    /// The next lost segment to retransmit (RFC 6675 NextSeg (1)).
    pub fn next_retransmit(&mut self) -> Option<u64> {
        // Lost segments whose retransmission is in flight stay `lost` until ACKed.
        if self.lost_out <= self.retrans_out {
            return None;
        }
        let start = self.retransmit_hint.max(self.snd_una);
        for seq in start..self.snd_nxt {
            let s = self.at(seq);
            if s.lost && !s.retrans && !s.sacked {
                self.retransmit_hint = seq;
                return Some(seq);
            }
        }
        self.retransmit_hint = self.snd_nxt;
        None
    }

    /// The cumulative ACK `ack` (RFC 5681, RFC 6675 (3)): `delivered(seq, seg)` for each
    /// segment it delivers that was not SACKed before. Whether `snd_una` advanced, and whether
    /// it covered a segment ever retransmitted, SACKed or not (`FLAG_RETRANS_DATA_ACKED`:
    /// Karn's rule then forbids an RTT sample from the ACK's timing).
    #[inline]
    pub fn ack_cumulative(
        &mut self,
        ack: u64,
        mut delivered: impl FnMut(u64, &TxSeg),
    ) -> (bool, bool) {
        if ack <= self.snd_una || ack > self.snd_nxt {
            return (false, false);
        }
        let mut retrans_acked = false;
        while self.snd_una < ack {
            let s = self.segs.pop_front().expect("outstanding segment");
            let seq = self.snd_una;
            self.snd_una += 1;
            retrans_acked |= s.ever_retrans;
            if s.sacked {
                self.sacked_out -= 1;
            } else {
                delivered(seq, &s);
                if s.lost {
                    self.lost_out -= 1;
                }
                if s.retrans {
                    self.retrans_out -= 1;
                }
            }
        }
        self.retransmit_hint = self.retransmit_hint.max(self.snd_una);
        (true, retrans_acked)
    }

    /// Tags the segments `blocks` SACK (RFC 2018, RFC 6675 (2)): `delivered(seq, seg)` for
    /// each newly SACKed one, as it was before the tag.
    #[inline]
    pub fn sack(&mut self, blocks: &[SackBlock], mut delivered: impl FnMut(u64, &TxSeg)) {
        let mut tagged = [SackBlock { start: 0, end: 0 }; MAX_SACK_BLOCKS];
        let mut n_tagged = 0;
        for b in blocks {
            let start = b.start.max(self.snd_una);
            let end = b.end.min(self.snd_nxt);
            if start >= end {
                continue;
            }
            tagged[n_tagged] = SackBlock { start, end };
            n_tagged += 1;
            let mut from = start;
            while from < end {
                let (skip_to, stop) = self.sack_cache_split(from, end);
                if skip_to > from {
                    from = skip_to;
                    continue;
                }
                for seq in from..stop {
                    let s = *self.at(seq);
                    if s.sacked {
                        continue;
                    }
                    delivered(seq, &s);
                    let s = self.at_mut(seq);
                    s.sacked = true;
                    let (lost, retrans) = (s.lost, s.retrans);
                    s.lost = false;
                    s.retrans = false;
                    self.sacked_out += 1;
                    self.lost_out -= u32::from(lost);
                    self.retrans_out -= u32::from(retrans);
                }
                from = stop;
            }
        }
        self.sack_cache = tagged;
        self.sack_cache_len = n_tagged;
    }

    /// Splits `from..end` at the previous ACK's tagged blocks: `(skip_to, stop)` where
    /// `skip_to > from` when `from` lies in one (skip to its end), otherwise `from..stop` is
    /// untagged by the previous ACK.
    fn sack_cache_split(&self, from: u64, end: u64) -> (u64, u64) {
        let mut stop = end;
        for c in &self.sack_cache[..self.sack_cache_len] {
            if c.start <= from && from < c.end {
                return (c.end, c.end);
            }
            if c.start > from {
                stop = stop.min(c.start);
            }
        }
        (from, stop)
    }

    /// `tcp_mark_skb_lost`: a retransmission deemed lost no longer counts as in flight.
    pub fn mark_lost(&mut self, seq: u64) {
        let s = self.at_mut(seq);
        let (was_retrans, was_lost) = (s.retrans, s.lost);
        s.retrans = false;
        s.lost = true;
        self.retrans_out -= u32::from(was_retrans);
        self.lost_out += u32::from(!was_lost);
        self.retransmit_hint = self.retransmit_hint.min(seq);
    }

    /// RFC 6675 IsLost: a segment not SACKed with at least DupThresh SACKed segments above it
    /// is lost (a retransmission is not judged again: if it is lost, the RTO finds it).
    pub fn mark_lost_by_dupthresh(&mut self) {
        let mut sacked_above = self.sacked_out;
        let mut seq = self.snd_una;
        while seq < self.snd_nxt && sacked_above >= DUP_THRESH {
            let s = *self.at(seq);
            if s.sacked {
                sacked_above -= 1;
            } else if !s.lost && !s.ever_retrans {
                self.mark_lost(seq);
            }
            seq += 1;
        }
    }

    /// `tcp_undo_cwnd_reduction(sk, true)`: nothing is deemed lost any more (retransmissions
    /// in flight stay counted as such).
    pub fn unmark_lost(&mut self) {
        for s in self.segs.iter_mut() {
            s.lost = false;
        }
        self.lost_out = 0;
        self.retransmit_hint = self.snd_nxt;
    }

    /// `tcp_timeout_mark_lost` (Linux 6.18, RACK always on): at a retransmission timeout the
    /// head is lost, and so is every segment not SACKed that has been out (since its last
    /// transmission) for `rack_rtt` or longer (`tcp_rack_skb_timeout(tp, skb, 0) <= 0`); those
    /// sent more recently are not marked yet. A retransmission marked lost no longer counts
    /// as in flight.
    pub fn timeout_mark_lost(&mut self, now: Time, rack_rtt: crate::time::Dur) {
        for seq in self.snd_una..self.snd_nxt {
            let s = *self.at(seq);
            if s.sacked || (s.lost && !s.retrans) {
                continue;
            }
            if seq != self.snd_una && now.saturating_since(s.sent_at) < rack_rtt {
                continue;
            }
            self.mark_lost(seq);
        }
        self.retransmit_hint = self.snd_una;
    }

    /// After a retransmission timeout (`tcp_enter_loss`): every segment not SACKed is lost,
    /// and no retransmission is in flight.
    pub fn mark_all_lost(&mut self) {
        self.lost_out = 0;
        self.retrans_out = 0;
        for s in self.segs.iter_mut() {
            s.retrans = false;
            s.lost = !s.sacked;
            if s.lost {
                self.lost_out += 1;
            }
        }
        self.retransmit_hint = self.snd_una;
    }
}

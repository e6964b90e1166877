//! The receiving half of one TCP subflow: reassembly at subflow level, SACK generation and
//! the delayed-ACK policy of Linux.
//!
//! - RFC 1122 4.2.3.2 / RFC 5681 4.2, as Linux's `__tcp_ack_snd_check`: ACK at least every
//!   second full-sized segment; otherwise a delayed-ACK timer (Linux `TCP_DELACK_MIN`, 40 ms).
//! - RFC 5681 4.2: an immediate ACK for an out-of-order segment and for one that fills a hole.
//! - Linux's SACK compression (`tcp_comp_sack_*`, `__tcp_ack_snd_check`): while the
//!   out-of-order queue is not empty, the first three ACKs at a given `rcv_nxt` go at once
//!   (the sender's DupThresh), later ones wait on a timer of 5% of the RTT, at most 1 ms, and
//!   go as one ACK (or at once after 44). With MPTCP's options an ACK has room for a single
//!   SACK block, so blocks that grew meanwhile go unreported: the sender under reordering
//!   sees holes that are not, and RACK resends them.
//! - Linux quick-ACK mode: the first segments of a connection are ACKed at once
//!   (`tcp_incr_quickack`, `TCP_MAX_QUICKACKS` = 16) so slow start is not slowed by the peer,
//!   and again after a duplicate below `rcv_nxt` (`tcp_enter_quickack_mode`: a retransmission
//!   the sender did not need, or a lost ACK).
//! - SACK blocks as Linux keeps them (`tcp_sack_new_ofo_skb`): a list of four, the block an
//!   arrival extends moved to the front (RFC 2018 4: the first block holds the most recently
//!   received segment). A run that fell off the list is forgotten: an arrival next to it starts
//!   a block of its own, so under heavy reordering the first block can be a fragment of the
//!   run the receiver holds. Extending a block below the first two sends a held ACK first.
//! - RFC 7323 4.3, as Linux (`tcp_replace_ts_recent`): TSecr echoes the TSval of the last
//!   segment that began at or below the left edge the last ACK reported (`rcv_wup`): of two
//!   in order under one delayed ACK the first, and a duplicate's own.
//!
//! Segments handed to the connection come out in subflow order through `poll_in_order`.

use crate::batch::Batch;
use crate::jiffies::Jiffies;
use crate::packet::{DataSeg, SackBlock};
use crate::time::{Dur, Time};
use std::collections::VecDeque;

pub const DELACK: Dur = Dur::from_millis(40);
pub const MAX_QUICKACKS: u32 = 16;

/// Linux `TCP_NUM_SACKS`: the SACK blocks a receiver remembers.
const NUM_SACKS: usize = 4;
/// Linux `TCP_SACK_BLOCKS_EXPECTED`: blocks an ACK is expected to carry; an arrival that
/// extends a block further down the list sends a held ACK first.
const SACK_BLOCKS_EXPECTED: usize = 2;

/// Linux `TCP_FASTRETRANS_THRESH`: immediate duplicate ACKs before SACK compression starts.
const COMP_SACK_DUPACKS: u8 = 3;
/// `net.ipv4.tcp_comp_sack_nr`: compressed ACKs after which one goes at once.
const COMP_SACK_NR: u32 = 44;
/// `net.ipv4.tcp_comp_sack_delay_ns`: the compression timer's longest delay.
const COMP_SACK_DELAY: Dur = Dur::from_millis(1);
/// `net.ipv4.tcp_comp_sack_slack_ns`: the hrtimer's slack. An idle CPU's timer fires at the
/// end of the range (the clock event is programmed for the hard expiry).
const COMP_SACK_SLACK: Dur = Dur::from_micros(100);

/// How often in-order segments are ACKed: Linux's every second one within the 40 ms
/// delayed-ACK timer (the default, and what the simulator and fidelity runs use), or every
/// `every` within `max_delay` (QUIC's ACK_FREQUENCY extension, an opt-in of the real
/// transport: fewer ACKs to seal, send and process). Either way a segment out of order, one
/// that fills a hole, a duplicate and the first segments (quick-ACK) are ACKed at once, so
/// the SACK blocks the sender sees are the same; each ACK echoes the latest in-order
/// segment's timestamp, so every RTT sample stays exact (there are fewer of them).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AckPolicy {
    pub every: u32,
    pub max_delay: Dur,
    /// Linux's SACK compression (above).
    pub comp_sack: bool,
}

impl AckPolicy {
    pub const LINUX: AckPolicy = AckPolicy {
        every: 2,
        max_delay: DELACK,
        comp_sack: true,
    };
}

impl Default for AckPolicy {
    fn default() -> Self {
        AckPolicy::LINUX
    }
}

/// A segment waiting in the subflow's out-of-order queue.
#[derive(Clone, Copy, Debug)]
pub struct RxSeg {
    pub dseq: u64,
    pub len: u32,
    /// When it first reached the receiver.
    pub arrival: Time,
}

/// What the receiver wants done after a segment arrived.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AckNeed {
    Now,
    /// A second full segment since the last ACK: Linux ACKs it at once if the receive window
    /// would not shrink (`__tcp_ack_snd_check`); the receiver decides.
    Second,
    /// The delayed-ACK timer is (or was already) armed.
    Delayed,
    /// Out of order, compressed: the compression timer is (or was already) armed.
    Compressed,
    /// Out of order, and the ACK held back goes first, with the SACK blocks of before this
    /// arrival (`tcp_sack_compress_send_ack`); then [`SubflowRx::after_flush`] says what this
    /// arrival asks.
    Flush,
}

pub struct SubflowRx {
    pub id: u8,
    rcv_nxt: u64,
    /// Out-of-order segments above `rcv_nxt`, index = seq - rcv_nxt - 1 (None = hole).
    ooo: VecDeque<Option<RxSeg>>,
    ooo_count: u32,
    ooo_bytes: u64,
    /// Segments now in order, not yet taken by the connection.
    ready: Batch<RxSeg>,
    /// SACK blocks in the order of most recent report (`tp->selective_acks`).
    sacks: [SackBlock; NUM_SACKS],
    num_sacks: usize,
    /// The blocks of before the arrival whose held ACK is being flushed.
    flushed: Option<([SackBlock; NUM_SACKS], usize)>,
    unacked_segs: u32,
    delack_at: Option<Time>,
    quickacks: u32,
    ts_recent: Time,
    /// `rcv_nxt` when the last ACK went (`tp->rcv_wup`).
    rcv_wup: u64,
    /// A duplicate arrived since the last ACK: the next one reports it (RFC 2883 D-SACK).
    dsack: bool,
    /// SACK compression: `tp->dup_ack_counter` at `comp_rcv_nxt`
    /// (`tp->compressed_ack_rcv_nxt`), ACKs held back since the last one sent
    /// (`tp->compressed_ack`), and when the held ACK goes (`compressed_ack_timer`).
    dup_acks: u8,
    comp_rcv_nxt: u64,
    compressed: u32,
    comp_at: Option<Time>,
    /// This end's own smoothed RTT (`tp->srtt_us`; a receiver's comes from its handshake).
    srtt: Dur,
    /// An MPTCP subflow: the ACK of an advance that leaves holes is compressed too.
    mptcp: bool,
    /// The kernel's ticks, on which the delayed-ACK timer runs.
    jiffies: Jiffies,
    policy: AckPolicy,
    pub segments_received: u64,
    pub duplicates: u64,
}

impl SubflowRx {
    pub fn new(id: u8) -> SubflowRx {
        SubflowRx {
            id,
            rcv_nxt: 0,
            ooo: VecDeque::new(),
            ooo_count: 0,
            ooo_bytes: 0,
            ready: Batch::default(),
            sacks: [SackBlock { start: 0, end: 0 }; NUM_SACKS],
            num_sacks: 0,
            flushed: None,
            unacked_segs: 0,
            delack_at: None,
            quickacks: MAX_QUICKACKS,
            ts_recent: Time::ZERO,
            rcv_wup: 0,
            dsack: false,
            dup_acks: 0,
            comp_rcv_nxt: 0,
            compressed: 0,
            comp_at: None,
            srtt: Dur::ZERO,
            mptcp: false,
            jiffies: Jiffies::EXACT,
            policy: AckPolicy::LINUX,
            segments_received: 0,
            duplicates: 0,
        }
    }

    pub fn set_jiffies(&mut self, jiffies: Jiffies) {
        self.jiffies = jiffies;
    }

    pub fn set_ack_policy(&mut self, policy: AckPolicy) {
        self.policy = policy;
    }

    pub fn set_mptcp(&mut self, mptcp: bool) {
        self.mptcp = mptcp;
    }

    /// This end's smoothed RTT, measured by its handshake.
    pub fn set_srtt(&mut self, srtt: Dur) {
        self.srtt = srtt;
    }

    pub fn rcv_nxt(&self) -> u64 {
        self.rcv_nxt
    }
    pub fn ts_recent(&self) -> Time {
        self.ts_recent
    }
    pub fn delack_at(&self) -> Option<Time> {
        self.delack_at
    }
    /// Payload bytes held in the subflow's out-of-order queue.
    pub fn ooo_bytes(&self) -> u64 {
        self.ooo_bytes
    }
    /// Segments from `rcv_nxt` to the end of the out-of-order queue (0 if it is empty).
    pub fn ooo_span_segments(&self) -> u64 {
        if self.ooo_count == 0 {
            0
        } else {
            self.ooo.len() as u64 + 1
        }
    }

    /// Takes a data segment; `rcv_rtt` is the receiver's RTT estimate (`rcv_rtt_est`, zero
    /// before its first sample). Returns when to ACK.
    pub fn on_segment(&mut self, now: Time, seg: &DataSeg, rcv_rtt: Dur) -> AckNeed {
        self.segments_received += 1;
        if seg.seq <= self.rcv_wup {
            // PAWS lets only a newer timestamp through.
            self.ts_recent = self.ts_recent.max(seg.ts_val);
        }
        if seg.seq < self.rcv_nxt {
            // RFC 5681 4.2 / RFC 2883: a duplicate is ACKed at once, and reported; Linux
            // ACKs the next ones at once too (`tcp_data_queue`'s `tcp_enter_quickack_mode`).
            self.duplicates += 1;
            self.dsack = true;
            self.quickacks = self.quickacks.max(MAX_QUICKACKS);
            return self.ack_now();
        }
        if self.holds(seg.seq) {
            // Already in the out-of-order queue: reported, its block moved to the front, and
            // ACKed as any arrival out of order (`tcp_data_queue_ofo`).
            self.duplicates += 1;
            self.dsack = true;
            if self.sack_new_ofo(seg.seq) {
                return AckNeed::Flush;
            }
            return self.ack_out_of_order(now, rcv_rtt);
        }
        let rx = RxSeg {
            dseq: seg.dseq,
            len: seg.len,
            arrival: now,
        };
        if seg.seq == self.rcv_nxt {
            let had_hole = self.ooo_count > 0;
            self.ready.push(rx);
            self.rcv_nxt += 1;
            // Pull what the new segment made contiguous.
            if had_hole {
                // ooo[0] now stands for the new rcv_nxt: take the run that starts there, then
                // drop the hole's empty slot so that indexing restarts at rcv_nxt + 1.
                let mut pulled = 0;
                while let Some(front) = self.ooo.pop_front() {
                    let Some(s) = front else { break };
                    self.ooo_count -= 1;
                    self.ooo_bytes -= s.len as u64;
                    self.ready.push(s);
                    self.rcv_nxt += 1;
                    pulled += 1;
                }
                self.sack_remove();
                if self.ooo_count > 0 && (pulled == 0 || self.mptcp) {
                    // An advance that leaves holes takes the compression path, as the first
                    // duplicate ACK at the new `rcv_nxt`: Linux ACKs "more than one full
                    // frame" at once instead, but on the kernel's MPTCP subflows this ACK is
                    // the first of the three (its captures under reordering compress from the
                    // fourth ACK at an ACK number on, the advance's own included).
                    return self.ack_out_of_order(now, rcv_rtt);
                }
                return self.ack_now();
            }
            self.unacked_segs += 1;
            if self.quickacks > 0 {
                return self.ack_now();
            }
            if self.delack_at.is_none() {
                self.delack_at = Some(self.jiffies.expiry(now, self.policy.max_delay));
            }
            if self.unacked_segs >= self.policy.every {
                return AckNeed::Second;
            }
            return AckNeed::Delayed;
        }
        // Out of order: store, remember the block, ACK at once.
        let idx = (seg.seq - self.rcv_nxt - 1) as usize;
        if self.ooo.len() < idx {
            self.ooo.resize(idx, None);
        }
        if self.ooo.len() == idx {
            // The common case: the next segment above the hole.
            self.ooo.push_back(None);
        }
        self.ooo[idx] = Some(rx);
        self.ooo_count += 1;
        self.ooo_bytes += seg.len as u64;
        if self.sack_new_ofo(seg.seq) {
            return AckNeed::Flush;
        }
        self.ack_out_of_order(now, rcv_rtt)
    }

    /// The held ACK went ([`AckNeed::Flush`]): what the arrival itself asks.
    pub fn after_flush(&mut self, now: Time, rcv_rtt: Dur) -> AckNeed {
        self.ack_out_of_order(now, rcv_rtt)
    }

    /// `__tcp_ack_snd_check` with the out-of-order queue not empty: at once in quick-ACK
    /// mode, for the first `COMP_SACK_DUPACKS` at this `rcv_nxt` and after `COMP_SACK_NR`
    /// held back; otherwise held for 5% of the RTT (the smaller of the receiver's estimate
    /// and this end's own srtt), at most `COMP_SACK_DELAY`.
    fn ack_out_of_order(&mut self, now: Time, rcv_rtt: Dur) -> AckNeed {
        if !self.policy.comp_sack || self.quickacks > 0 || self.compressed >= COMP_SACK_NR {
            return self.ack_now();
        }
        if self.comp_rcv_nxt != self.rcv_nxt {
            self.comp_rcv_nxt = self.rcv_nxt;
            self.dup_acks = 0;
        }
        if self.dup_acks < COMP_SACK_DUPACKS {
            self.dup_acks += 1;
            return self.ack_now();
        }
        self.compressed += 1;
        if self.comp_at.is_none() {
            let rtt = if self.srtt > Dur::ZERO && self.srtt < rcv_rtt {
                self.srtt
            } else {
                rcv_rtt
            };
            let delay = COMP_SACK_DELAY.min(Dur(rtt.0 / 20));
            self.comp_at = Some(now + delay + COMP_SACK_SLACK);
        }
        AckNeed::Compressed
    }

    fn holds(&self, seq: u64) -> bool {
        seq > self.rcv_nxt
            && self
                .ooo
                .get((seq - self.rcv_nxt - 1) as usize)
                .is_some_and(|s| s.is_some())
    }

    fn ack_now(&mut self) -> AckNeed {
        AckNeed::Now
    }

    /// The receiver holds back the ACK of a second segment (its window would shrink): the
    /// delayed-ACK timer sends it, unless it is due within a quarter of its timeout, when it
    /// goes now (`tcp_send_delayed_ack`). Returns whether to ACK now.
    pub fn hold_ack(&mut self, now: Time) -> bool {
        match self.delack_at {
            Some(t) => t <= now + Dur(self.policy.max_delay.0 / 4),
            None => {
                self.delack_at = Some(self.jiffies.expiry(now, self.policy.max_delay));
                false
            }
        }
    }

    /// Segments received in order since the last ACK.
    pub fn unacked_segments(&self) -> u32 {
        self.unacked_segs
    }

    /// Called when an ACK is actually sent (immediate or delayed).
    /// Whether the ACK about to go reports a duplicate (Linux `tcp_dsack_set`).
    pub fn dsack(&self) -> bool {
        self.dsack
    }

    pub fn on_ack_sent(&mut self) {
        self.rcv_wup = self.rcv_nxt;
        self.dsack = false;
        self.unacked_segs = 0;
        self.delack_at = None;
        self.quickacks = self.quickacks.saturating_sub(1);
        // `tcp_event_ack_sent`: what was held back goes with it.
        self.compressed = 0;
        self.comp_at = None;
        self.flushed = None;
    }

    /// When the delayed-ACK or the compression timer runs next.
    pub fn timer_at(&self) -> Option<Time> {
        match (self.delack_at, self.comp_at) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// The delayed-ACK or the compression timer fired: whether an ACK is owed.
    pub fn on_delack_timer(&mut self, now: Time) -> bool {
        let delack = self.delack_at.is_some_and(|t| t <= now);
        let comp = self.comp_at.is_some_and(|t| t <= now);
        if delack {
            self.delack_at = None;
        }
        if comp {
            self.comp_at = None;
        }
        delack || (comp && self.compressed > 0)
    }

    /// Takes the next segment that is in order at subflow level.
    pub fn poll_in_order(&mut self) -> Option<RxSeg> {
        self.ready.pop()
    }

    /// `tcp_sack_new_ofo_skb`: segment `seq` arrived out of order. Returns whether a held
    /// ACK goes first (it extended a block below the first `SACK_BLOCKS_EXPECTED`, or started
    /// one with that many in the list).
    fn sack_new_ofo(&mut self, seq: u64) -> bool {
        let n = self.num_sacks;
        let (start, end) = (seq, seq + 1);
        let found = self.sacks[..n]
            .iter()
            .position(|b| b.start <= end && start <= b.end);
        let at = found.unwrap_or(n);
        let flush = at >= SACK_BLOCKS_EXPECTED && self.compressed > 0;
        if flush {
            self.flushed = Some((self.sacks, n));
        }
        match found {
            Some(i) => {
                let b = &mut self.sacks[i];
                b.start = b.start.min(start);
                b.end = b.end.max(end);
                self.sacks[..=i].rotate_right(1);
                self.sack_maybe_coalesce();
            }
            None => {
                // A new block at the front; a full list forgets its last.
                let keep = n.min(NUM_SACKS - 1);
                self.sacks.copy_within(0..keep, 1);
                self.sacks[0] = SackBlock { start, end };
                self.num_sacks = keep + 1;
            }
        }
        flush
    }

    /// `tcp_sack_maybe_coalesce`: the first block swallows the others it now touches.
    fn sack_maybe_coalesce(&mut self) {
        let mut i = 1;
        while i < self.num_sacks {
            let (first, b) = (self.sacks[0], self.sacks[i]);
            if first.start <= b.end && b.start <= first.end {
                self.sacks[0] = SackBlock {
                    start: first.start.min(b.start),
                    end: first.end.max(b.end),
                };
                self.sacks.copy_within(i + 1..self.num_sacks, i);
                self.num_sacks -= 1;
            } else {
                i += 1;
            }
        }
    }

    /// `tcp_sack_remove`: blocks `rcv_nxt` has reached are dropped (it covers them whole:
    /// a block is received data, and the hole's filling took the run it belongs to).
    fn sack_remove(&mut self) {
        if self.ooo_count == 0 {
            self.num_sacks = 0;
            return;
        }
        let mut n = 0;
        for i in 0..self.num_sacks {
            let b = self.sacks[i];
            if b.start > self.rcv_nxt {
                self.sacks[n] = b;
                n += 1;
            } else {
                debug_assert!(b.end <= self.rcv_nxt, "a SACK block across rcv_nxt");
            }
        }
        self.num_sacks = n;
    }

    /// SACK blocks to put in the next ACK, the most recent first (a flushed ACK's: those of
    /// before the arrival that flushed it).
    pub fn sack_blocks(&self) -> &[SackBlock] {
        match &self.flushed {
            Some((blocks, n)) => &blocks[..*n],
            None => &self.sacks[..self.num_sacks],
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn seg(seq: u64) -> DataSeg {
        DataSeg {
            seq,
            dseq: seq,
            len: 1448,
            ts_val: Time(seq),
            ts_ecr: Time::ZERO,
            probe: false,
        }
    }

    fn drain(rx: &mut SubflowRx) -> Vec<u64> {
        std::iter::from_fn(|| rx.poll_in_order().map(|s| s.dseq)).collect()
    }

    #[test]
    fn delayed_ack_every_second_segment_after_quickack() {
        let mut rx = SubflowRx::new(0);
        rx.quickacks = 0;
        assert_eq!(rx.on_segment(Time(1), &seg(0), Dur::ZERO), AckNeed::Delayed);
        assert_eq!(rx.delack_at(), Some(Time(1) + DELACK));
        assert_eq!(rx.on_segment(Time(2), &seg(1), Dur::ZERO), AckNeed::Second);
        rx.on_ack_sent();
        assert_eq!(rx.on_segment(Time(3), &seg(2), Dur::ZERO), AckNeed::Delayed);
        assert!(!rx.on_delack_timer(Time(4)));
        assert!(rx.on_delack_timer(Time(3) + DELACK));
    }

    #[test]
    fn an_ack_frequency_acks_every_nth_segment_but_out_of_order_ones_at_once() {
        let policy = AckPolicy {
            every: 8,
            max_delay: Dur::from_millis(1),
            ..AckPolicy::LINUX
        };
        let mut rx = SubflowRx::new(0);
        rx.set_ack_policy(policy);
        rx.quickacks = 0;
        let mut linux = SubflowRx::new(0);
        linux.quickacks = 0;
        for i in 0..7 {
            assert_eq!(
                rx.on_segment(Time(i), &seg(i), Dur::ZERO),
                AckNeed::Delayed,
                "{i}"
            );
            linux.on_segment(Time(i), &seg(i), Dur::ZERO);
        }
        assert_eq!(rx.delack_at(), Some(Time(0) + policy.max_delay));
        assert_eq!(rx.on_segment(Time(7), &seg(7), Dur::ZERO), AckNeed::Second);
        linux.on_segment(Time(7), &seg(7), Dur::ZERO);
        rx.on_ack_sent();
        linux.on_ack_sent();
        // A hole: each segment above it and the one filling it are ACKed at once, with the
        // SACK blocks and the echoed timestamp of Linux's receiver.
        for (s, need) in [(10, AckNeed::Now), (12, AckNeed::Now), (8, AckNeed::Now)] {
            assert_eq!(rx.on_segment(Time(s), &seg(s), Dur::ZERO), need, "{s}");
            linux.on_segment(Time(s), &seg(s), Dur::ZERO);
            assert_eq!(rx.sack_blocks(), linux.sack_blocks(), "{s}");
            assert_eq!(rx.ts_recent(), linux.ts_recent(), "{s}");
            rx.on_ack_sent();
            linux.on_ack_sent();
        }
        assert_eq!(
            rx.on_segment(Time(9), &seg(9), Dur::ZERO),
            AckNeed::Now,
            "fills a hole"
        );
        linux.on_segment(Time(9), &seg(9), Dur::ZERO);
        assert_eq!(rx.sack_blocks(), linux.sack_blocks());
        assert_eq!(rx.rcv_nxt(), 11);
        assert_eq!(
            rx.on_segment(Time(13), &seg(11), Dur::ZERO),
            AckNeed::Now,
            "fills the last"
        );
        assert_eq!(rx.rcv_nxt(), 13);
    }

    #[test]
    fn quickack_at_start() {
        let mut rx = SubflowRx::new(0);
        for i in 0..MAX_QUICKACKS as u64 {
            assert_eq!(rx.on_segment(Time(i), &seg(i), Dur::ZERO), AckNeed::Now);
            rx.on_ack_sent();
        }
        assert_eq!(
            rx.on_segment(Time(99), &seg(16), Dur::ZERO),
            AckNeed::Delayed
        );
    }

    #[test]
    fn reassembly_and_sack_blocks() {
        let mut rx = SubflowRx::new(0);
        rx.quickacks = 0;
        rx.on_segment(Time(0), &seg(0), Dur::ZERO);
        assert_eq!(rx.on_segment(Time(1), &seg(2), Dur::ZERO), AckNeed::Now);
        rx.on_segment(Time(2), &seg(3), Dur::ZERO);
        rx.on_segment(Time(3), &seg(6), Dur::ZERO);
        assert_eq!(
            rx.sack_blocks(),
            &[
                SackBlock { start: 6, end: 7 },
                SackBlock { start: 2, end: 4 }
            ]
        );
        assert_eq!(drain(&mut rx), vec![0]);
        // Filling the hole at 1 releases 1..=3 and is ACKed at once.
        assert_eq!(rx.on_segment(Time(4), &seg(1), Dur::ZERO), AckNeed::Now);
        assert_eq!(drain(&mut rx), vec![1, 2, 3]);
        assert_eq!(rx.rcv_nxt(), 4);
        assert_eq!(rx.sack_blocks(), &[SackBlock { start: 6, end: 7 }]);
        rx.on_segment(Time(5), &seg(4), Dur::ZERO);
        rx.on_segment(Time(5), &seg(5), Dur::ZERO);
        assert_eq!(drain(&mut rx), vec![4, 5, 6]);
        assert_eq!(rx.rcv_nxt(), 7);
        assert!(rx.sack_blocks().is_empty());
        assert_eq!(rx.ooo_bytes(), 0);
    }

    #[test]
    fn the_first_sack_block_holds_the_last_arrival_and_every_block_is_received_data() {
        // Windows of 64 segments arrive shuffled (a seeded xorshift), some twice: whatever the
        // list forgot, each block it reports lies within a run the receiver holds, and the
        // first holds the segment that just arrived (RFC 2018 4).
        let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
        let mut next = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        let mut rx = SubflowRx::new(0);
        let mut checked = 0;
        for window in 0..50u64 {
            let mut order: Vec<u64> = (window * 64..window * 64 + 64).collect();
            for i in (1..order.len()).rev() {
                order.swap(i, (next() % (i as u64 + 1)) as usize);
            }
            for &seq in &order {
                let dup = next() % 8 == 0;
                for _ in 0..1 + dup as usize {
                    let above = seq > rx.rcv_nxt();
                    rx.on_segment(Time(seq), &seg(seq), Dur::ZERO);
                    rx.on_ack_sent();
                    for b in rx.sack_blocks() {
                        assert!(b.start > rx.rcv_nxt() && b.start < b.end, "{b:?}");
                        assert!((b.start..b.end).all(|q| rx.holds(q)), "{b:?}");
                    }
                    assert!(rx.sack_blocks().len() <= NUM_SACKS);
                    if above && seq > rx.rcv_nxt() {
                        let b = rx.sack_blocks()[0];
                        assert!(b.start <= seq && seq < b.end, "seq {seq}: {b:?}");
                        checked += 1;
                    }
                }
            }
            drain(&mut rx);
        }
        assert_eq!(rx.rcv_nxt(), 50 * 64);
        assert!(checked > 1000, "{checked}");
    }

    #[test]
    fn a_run_the_list_forgot_comes_back_as_a_fragment_as_the_kernel_reports_it() {
        // Five runs above a hole at 0: the list keeps four, the oldest (10) falls off. The
        // next segment of that run starts a block of its own, as the kernel's first blocks
        // under reordering do (a single segment above a run it holds); a run still on the
        // list is reported whole when it grows.
        let mut rx = SubflowRx::new(0);
        for q in [10, 20, 30, 40, 50] {
            rx.on_segment(Time(q), &seg(q), Dur::ZERO);
        }
        assert_eq!(rx.sack_blocks().len(), NUM_SACKS);
        rx.on_segment(Time(60), &seg(11), Dur::ZERO);
        assert_eq!(rx.sack_blocks()[0], SackBlock { start: 11, end: 12 });
        rx.on_segment(Time(61), &seg(41), Dur::ZERO);
        assert_eq!(rx.sack_blocks()[0], SackBlock { start: 40, end: 42 });
        // 39 joins the run at 40: one block again, at the front.
        rx.on_segment(Time(62), &seg(39), Dur::ZERO);
        assert_eq!(rx.sack_blocks()[0], SackBlock { start: 39, end: 42 });
    }

    #[test]
    fn sack_compression_holds_acks_after_three_and_flushes_before_a_block_further_down() {
        let mut rx = SubflowRx::new(0);
        rx.quickacks = 0;
        let rtt = Dur::from_millis(10);
        // Above a hole at 0: three duplicate ACKs at once, then held for 5% of the RTT.
        for q in 1..=3 {
            assert_eq!(rx.on_segment(Time(q), &seg(q), rtt), AckNeed::Now, "{q}");
            rx.on_ack_sent();
        }
        assert_eq!(rx.on_segment(Time(4), &seg(4), rtt), AckNeed::Compressed);
        let due = Time(4) + Dur::from_micros(500) + COMP_SACK_SLACK;
        assert_eq!(rx.timer_at(), Some(due));
        assert_eq!(rx.on_segment(Time(5), &seg(5), rtt), AckNeed::Compressed);
        // A second block: no held ACK goes first (only one was listed before it).
        assert_eq!(rx.on_segment(Time(6), &seg(8), rtt), AckNeed::Compressed);
        assert_eq!(rx.sack_blocks().len(), 2);
        // The third block: the held ACK goes first, with the blocks of before it.
        assert_eq!(rx.on_segment(Time(7), &seg(12), rtt), AckNeed::Flush);
        assert_eq!(
            rx.sack_blocks(),
            &[
                SackBlock { start: 8, end: 9 },
                SackBlock { start: 1, end: 6 }
            ]
        );
        rx.on_ack_sent();
        assert_eq!(rx.sack_blocks()[0], SackBlock { start: 12, end: 13 });
        assert_eq!(rx.after_flush(Time(7), rtt), AckNeed::Compressed);
        // The timer sends what was held.
        assert!(!rx.on_delack_timer(Time(7)));
        let due = rx.timer_at().unwrap();
        assert!(rx.on_delack_timer(due));
        // After 44 held back, one goes at once.
        rx.on_ack_sent();
        let mut at_once = 0;
        for q in 100..150 {
            if rx.on_segment(Time(q), &seg(q), rtt) == AckNeed::Now {
                at_once += 1;
                rx.on_ack_sent();
            }
        }
        assert_eq!(at_once, 1);
    }

    #[test]
    fn a_duplicate_below_rcv_nxt_restarts_quick_acks() {
        let mut rx = SubflowRx::new(0);
        rx.quickacks = 0;
        rx.on_segment(Time(0), &seg(0), Dur::ZERO);
        rx.on_ack_sent();
        assert_eq!(rx.on_segment(Time(1), &seg(0), Dur::ZERO), AckNeed::Now);
        rx.on_ack_sent();
        // In order, but ACKed at once for the next sixteen ACKs.
        assert_eq!(rx.on_segment(Time(2), &seg(1), Dur::ZERO), AckNeed::Now);
    }

    #[test]
    fn duplicates_are_acked_at_once_and_not_delivered_twice() {
        let mut rx = SubflowRx::new(0);
        rx.quickacks = 0;
        rx.on_segment(Time(0), &seg(0), Dur::ZERO);
        assert!(!rx.dsack());
        assert_eq!(rx.on_segment(Time(1), &seg(0), Dur::ZERO), AckNeed::Now);
        assert_eq!(drain(&mut rx), vec![0]);
        assert_eq!(rx.duplicates, 1);
        // That ACK reports the duplicate (D-SACK), the next does not.
        assert!(rx.dsack());
        rx.on_ack_sent();
        assert!(!rx.dsack());
    }

    #[test]
    fn timestamp_echo_follows_the_left_edge_as_the_last_ack_reported_it() {
        let mut rx = SubflowRx::new(0);
        rx.quickacks = 0;
        rx.on_segment(Time(0), &seg(0), Dur::ZERO);
        // Out of order: above the edge, not echoed.
        rx.on_segment(Time(1), &seg(5), Dur::ZERO);
        assert_eq!(rx.ts_recent(), Time(0));
        rx.on_ack_sent();
        // Two in order under one delayed ACK: the first's is echoed (the ACK's RTT sample
        // includes the wait, as RFC 7323 4.3 asks).
        rx.on_segment(Time(2), &seg(1), Dur::ZERO);
        rx.on_ack_sent();
        rx.on_segment(Time(3), &seg(2), Dur::ZERO);
        rx.on_segment(Time(4), &seg(3), Dur::ZERO);
        assert_eq!(rx.ts_recent(), Time(2));
        rx.on_ack_sent();
        // A duplicate below the edge: its own, newer timestamp.
        let again = DataSeg {
            ts_val: Time(9),
            ..seg(1)
        };
        rx.on_segment(Time(9), &again, Dur::ZERO);
        assert_eq!(rx.ts_recent(), Time(9));
    }
}

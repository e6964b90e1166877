//! The receiving half of one TCP subflow: reassembly at subflow level, SACK generation and
//! the delayed-ACK policy of Linux.
//!
//! - RFC 1122 4.2.3.2 / RFC 5681 4.2, as Linux's `__tcp_ack_snd_check`: ACK at least every
//!   second full-sized segment; otherwise a delayed-ACK timer (Linux `TCP_DELACK_MIN`, 40 ms).
//! - RFC 5681 4.2: an immediate ACK for an out-of-order segment and for one that fills a hole.
//! - Linux quick-ACK mode: the first segments of a connection are ACKed at once
//!   (`tcp_incr_quickack`, `TCP_MAX_QUICKACKS` = 16) so slow start is not slowed by the peer.
//! - RFC 2018 4: the first SACK block reports the most recently received segment; the others
//!   repeat the most recently reported blocks.
//! - RFC 7323 4.3: TSecr echoes the TSval of the segment that last advanced the left edge.
//!
//! Segments handed to the connection come out in subflow order through `poll_in_order`.

use crate::batch::Batch;
use crate::jiffies::Jiffies;
use crate::packet::{DataSeg, SackBlock, MAX_SACK_BLOCKS};
use crate::time::{Dur, Time};
use std::collections::VecDeque;

pub const DELACK: Dur = Dur::from_millis(40);
pub const MAX_QUICKACKS: u32 = 16;

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
}

impl AckPolicy {
    pub const LINUX: AckPolicy = AckPolicy {
        every: 2,
        max_delay: DELACK,
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
    /// SACK blocks in the order of most recent report.
    recent_blocks: [SackBlock; MAX_SACK_BLOCKS],
    recent_len: usize,
    unacked_segs: u32,
    delack_at: Option<Time>,
    quickacks: u32,
    ts_recent: Time,
    /// A duplicate arrived since the last ACK: the next one reports it (RFC 2883 D-SACK).
    dsack: bool,
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
            recent_blocks: [SackBlock { start: 0, end: 0 }; MAX_SACK_BLOCKS],
            recent_len: 0,
            unacked_segs: 0,
            delack_at: None,
            quickacks: MAX_QUICKACKS,
            ts_recent: Time::ZERO,
            dsack: false,
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

    /// Takes a data segment. Returns when to ACK.
    pub fn on_segment(&mut self, now: Time, seg: &DataSeg) -> AckNeed {
        self.segments_received += 1;
        if seg.seq < self.rcv_nxt || self.holds(seg.seq) {
            // RFC 5681 4.2 / RFC 2883: a duplicate is ACKed at once, and reported.
            self.duplicates += 1;
            self.dsack = true;
            return self.ack_now();
        }
        let rx = RxSeg {
            dseq: seg.dseq,
            len: seg.len,
            arrival: now,
        };
        if seg.seq == self.rcv_nxt {
            let had_hole = self.ooo_count > 0;
            self.ts_recent = seg.ts_val;
            self.ready.push(rx);
            self.rcv_nxt += 1;
            // Pull what the new segment made contiguous.
            if had_hole {
                // ooo[0] now stands for the new rcv_nxt: take the run that starts there, then
                // drop the hole's empty slot so that indexing restarts at rcv_nxt + 1.
                while let Some(front) = self.ooo.pop_front() {
                    let Some(s) = front else { break };
                    self.ooo_count -= 1;
                    self.ooo_bytes -= s.len as u64;
                    self.ready.push(s);
                    self.rcv_nxt += 1;
                }
                self.prune_blocks();
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
        self.note_block(seg.seq);
        self.ack_now()
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
        self.dsack = false;
        self.unacked_segs = 0;
        self.delack_at = None;
        self.quickacks = self.quickacks.saturating_sub(1);
    }

    /// The delayed-ACK timer fired: whether an ACK is owed.
    pub fn on_delack_timer(&mut self, now: Time) -> bool {
        match self.delack_at {
            Some(t) if t <= now => {
                self.delack_at = None;
                true
            }
            _ => false,
        }
    }

    /// Takes the next segment that is in order at subflow level.
    pub fn poll_in_order(&mut self) -> Option<RxSeg> {
        self.ready.pop()
    }

    /// The extent of the contiguous out-of-order run holding `seq`, which just arrived.
    fn run_around(&self, seq: u64) -> SackBlock {
        // The recent blocks are whole runs (a block that a later arrival extended was dropped
        // as covered), so a run that `seq` joins is usually known without walking it.
        let known = |at: u64, edge: fn(&SackBlock) -> u64, other: fn(&SackBlock) -> u64| {
            self.recent_blocks[..self.recent_len]
                .iter()
                .find(|b| edge(b) == at)
                .map(other)
        };
        let base = self.rcv_nxt + 1;
        let idx = (seq - base) as usize;
        let start = known(seq, |b| b.end, |b| b.start).unwrap_or_else(|| {
            let mut lo = idx;
            while lo > 0 && self.ooo[lo - 1].is_some() {
                lo -= 1;
            }
            base + lo as u64
        });
        let end = known(seq + 1, |b| b.start, |b| b.end).unwrap_or_else(|| {
            let mut hi = idx + 1;
            while hi < self.ooo.len() && self.ooo[hi].is_some() {
                hi += 1;
            }
            base + hi as u64
        });
        let block = SackBlock { start, end };
        debug_assert_eq!(block, self.walk_run(idx), "recent blocks out of date");
        block
    }

    /// `run_around` by walking the out-of-order queue (the debug builds' check).
    fn walk_run(&self, idx: usize) -> SackBlock {
        let mut lo = idx;
        while lo > 0 && self.ooo[lo - 1].is_some() {
            lo -= 1;
        }
        let mut hi = idx + 1;
        while hi < self.ooo.len() && self.ooo[hi].is_some() {
            hi += 1;
        }
        SackBlock {
            start: self.rcv_nxt + 1 + lo as u64,
            end: self.rcv_nxt + 1 + hi as u64,
        }
    }

    fn note_block(&mut self, seq: u64) {
        let first = self.run_around(seq);
        let mut blocks = [first; MAX_SACK_BLOCKS];
        let mut n = 1;
        for b in &self.recent_blocks[..self.recent_len] {
            if n == MAX_SACK_BLOCKS {
                break;
            }
            // Drop blocks now covered by the new one.
            if b.start >= first.start && b.end <= first.end {
                continue;
            }
            blocks[n] = *b;
            n += 1;
        }
        self.recent_blocks = blocks;
        self.recent_len = n;
    }

    fn prune_blocks(&mut self) {
        let mut n = 0;
        for i in 0..self.recent_len {
            let b = self.recent_blocks[i];
            if b.end > self.rcv_nxt {
                self.recent_blocks[n] = SackBlock {
                    start: b.start.max(self.rcv_nxt + 1),
                    end: b.end,
                };
                n += 1;
            }
        }
        self.recent_len = n;
        if self.ooo_count == 0 {
            self.recent_len = 0;
        }
    }

    /// SACK blocks to put in the next ACK.
    pub fn sack_blocks(&self) -> &[SackBlock] {
        &self.recent_blocks[..self.recent_len]
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
        assert_eq!(rx.on_segment(Time(1), &seg(0)), AckNeed::Delayed);
        assert_eq!(rx.delack_at(), Some(Time(1) + DELACK));
        assert_eq!(rx.on_segment(Time(2), &seg(1)), AckNeed::Second);
        rx.on_ack_sent();
        assert_eq!(rx.on_segment(Time(3), &seg(2)), AckNeed::Delayed);
        assert!(!rx.on_delack_timer(Time(4)));
        assert!(rx.on_delack_timer(Time(3) + DELACK));
    }

    #[test]
    fn an_ack_frequency_acks_every_nth_segment_but_out_of_order_ones_at_once() {
        let policy = AckPolicy {
            every: 8,
            max_delay: Dur::from_millis(1),
        };
        let mut rx = SubflowRx::new(0);
        rx.set_ack_policy(policy);
        rx.quickacks = 0;
        let mut linux = SubflowRx::new(0);
        linux.quickacks = 0;
        for i in 0..7 {
            assert_eq!(rx.on_segment(Time(i), &seg(i)), AckNeed::Delayed, "{i}");
            linux.on_segment(Time(i), &seg(i));
        }
        assert_eq!(rx.delack_at(), Some(Time(0) + policy.max_delay));
        assert_eq!(rx.on_segment(Time(7), &seg(7)), AckNeed::Second);
        linux.on_segment(Time(7), &seg(7));
        rx.on_ack_sent();
        // A hole: each segment above it and the one filling it are ACKed at once, with the
        // SACK blocks and the echoed timestamp of Linux's receiver.
        for (s, need) in [(10, AckNeed::Now), (12, AckNeed::Now), (8, AckNeed::Now)] {
            assert_eq!(rx.on_segment(Time(s), &seg(s)), need, "{s}");
            linux.on_segment(Time(s), &seg(s));
            assert_eq!(rx.sack_blocks(), linux.sack_blocks(), "{s}");
            assert_eq!(rx.ts_recent(), linux.ts_recent(), "{s}");
        }
        assert_eq!(
            rx.on_segment(Time(9), &seg(9)),
            AckNeed::Now,
            "fills a hole"
        );
        linux.on_segment(Time(9), &seg(9));
        assert_eq!(rx.sack_blocks(), linux.sack_blocks());
        assert_eq!(rx.rcv_nxt(), 11);
        assert_eq!(
            rx.on_segment(Time(13), &seg(11)),
            AckNeed::Now,
            "fills the last"
        );
        assert_eq!(rx.rcv_nxt(), 13);
    }

    #[test]
    fn quickack_at_start() {
        let mut rx = SubflowRx::new(0);
        for i in 0..MAX_QUICKACKS as u64 {
            assert_eq!(rx.on_segment(Time(i), &seg(i)), AckNeed::Now);
            rx.on_ack_sent();
        }
        assert_eq!(rx.on_segment(Time(99), &seg(16)), AckNeed::Delayed);
    }

    #[test]
    fn reassembly_and_sack_blocks() {
        let mut rx = SubflowRx::new(0);
        rx.quickacks = 0;
        rx.on_segment(Time(0), &seg(0));
        assert_eq!(rx.on_segment(Time(1), &seg(2)), AckNeed::Now);
        rx.on_segment(Time(2), &seg(3));
        rx.on_segment(Time(3), &seg(6));
        assert_eq!(
            rx.sack_blocks(),
            &[
                SackBlock { start: 6, end: 7 },
                SackBlock { start: 2, end: 4 }
            ]
        );
        assert_eq!(drain(&mut rx), vec![0]);
        // Filling the hole at 1 releases 1..=3 and is ACKed at once.
        assert_eq!(rx.on_segment(Time(4), &seg(1)), AckNeed::Now);
        assert_eq!(drain(&mut rx), vec![1, 2, 3]);
        assert_eq!(rx.rcv_nxt(), 4);
        assert_eq!(rx.sack_blocks(), &[SackBlock { start: 6, end: 7 }]);
        rx.on_segment(Time(5), &seg(4));
        rx.on_segment(Time(5), &seg(5));
        assert_eq!(drain(&mut rx), vec![4, 5, 6]);
        assert_eq!(rx.rcv_nxt(), 7);
        assert!(rx.sack_blocks().is_empty());
        assert_eq!(rx.ooo_bytes(), 0);
    }

    #[test]
    fn first_sack_block_is_the_whole_run_of_the_last_arrival_in_any_order() {
        // Windows of 64 segments arrive shuffled (a seeded xorshift), some twice; the first
        // SACK block must always be the maximal run around the segment that just arrived.
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
                    let above = seq > rx.rcv_nxt() && !rx.holds(seq);
                    rx.on_segment(Time(seq), &seg(seq));
                    if above {
                        let idx = (seq - rx.rcv_nxt() - 1) as usize;
                        assert_eq!(rx.sack_blocks()[0], rx.walk_run(idx), "seq {seq}");
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
    fn duplicates_are_acked_at_once_and_not_delivered_twice() {
        let mut rx = SubflowRx::new(0);
        rx.quickacks = 0;
        rx.on_segment(Time(0), &seg(0));
        assert!(!rx.dsack());
        assert_eq!(rx.on_segment(Time(1), &seg(0)), AckNeed::Now);
        assert_eq!(drain(&mut rx), vec![0]);
        assert_eq!(rx.duplicates, 1);
        // That ACK reports the duplicate (D-SACK), the next does not.
        assert!(rx.dsack());
        rx.on_ack_sent();
        assert!(!rx.dsack());
    }

    #[test]
    fn timestamp_echo_follows_the_left_edge() {
        let mut rx = SubflowRx::new(0);
        rx.on_segment(Time(0), &seg(0));
        rx.on_segment(Time(1), &seg(5));
        assert_eq!(rx.ts_recent(), Time(0));
    }
}

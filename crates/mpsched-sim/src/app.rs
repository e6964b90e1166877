//! A rate-limited application on the main connection (`Workload::Rate`, paper 001 sec. 4.3):
//! it writes a block at a fixed interval and times each block until its last byte is
//! delivered in order.

use mpsched_core::conn::stats::Histogram;
use mpsched_core::{Dur, Time};

/// It writes a block every `interval` from the server's start; the client times each block's
/// last byte.
pub struct App {
    interval: Dur,
    /// Segments a block takes (whole segments: the model's are full-sized).
    block_segs: u64,
    /// Payload bytes of a full segment.
    mss: u64,
    start: Time,
    /// Blocks written before this are delivered but not timed (the warm-up).
    timed_from: Time,
    written: u64,
    delivered: u64,
    /// From a block's write to its last byte delivered in order.
    pub delays: Histogram,
    /// The least a block can take: the best path's propagation delay plus the block's
    /// serialization at its rate (paper 001's "lowest one-way delay").
    pub ideal: Dur,
    /// The worst block: its delay and when it was written.
    pub worst: Option<(Dur, Time)>,
}

impl App {
    /// Blocks of `block_segs` segments of `mss` bytes every `interval` from `start`, timed
    /// from `timed_from`; `ideal` is the least one can take.
    pub(crate) fn new(
        interval: Dur,
        block_segs: u64,
        mss: u64,
        start: Time,
        timed_from: Time,
        ideal: Dur,
    ) -> App {
        App {
            interval,
            block_segs,
            mss,
            start,
            timed_from,
            written: 0,
            delivered: 0,
            delays: Histogram::new(),
            ideal,
            worst: None,
        }
    }

    /// When it writes its first block.
    pub(crate) fn start(&self) -> Time {
        self.start
    }

    /// It writes its next block: the segments the block takes, and when the next one is due.
    pub(crate) fn write(&mut self) -> (u64, Time) {
        self.written += 1;
        (self.block_segs, self.start + self.interval * self.written)
    }

    /// The client has `delivered` bytes in order: time the blocks that are complete.
    pub(crate) fn on_delivered(&mut self, now: Time, delivered: u64) {
        while self.delivered < self.written && delivered >= self.block_end(self.delivered) {
            let written_at = self.start + self.interval * self.delivered;
            self.delivered += 1;
            if written_at < self.timed_from {
                continue;
            }
            let d = now.saturating_since(written_at);
            self.delays.record(d.as_nanos());
            if self.worst.is_none_or(|(w, _)| d > w) {
                self.worst = Some((d, written_at));
            }
        }
    }

    /// Stream bytes up to the end of block `k` (blocks are padded to whole segments).
    fn block_end(&self, k: u64) -> u64 {
        (k + 1) * self.block_segs * self.mss
    }
}

//! The connection's data-level send queue (RFC 8684 3.3): every data segment the application
//! has written and the peer has not yet Data-ACKed, the peer's receive window and the send
//! buffer. The sender moves it forward; schedulers read it through `SchedCtx`, which is why
//! it lives apart from both.

use crate::conn::dfrag::Frags;
use crate::subflow::SubflowSet;
use crate::time::Time;
use crate::units::Bytes;
use std::collections::VecDeque;

/// Connection-level state of one data segment.
#[derive(Clone, Copy, Debug)]
pub struct DataSegState {
    pub len: u32,
    pub sent_on: SubflowSet,
    pub first_sent: Time,
    pub transmissions: u16,
    /// Subflow-level TCP retransmissions of this segment (fast recovery, RTO).
    pub retransmissions: u16,
    /// Waiting in the reinjection queue (`Shared::reinject`); cleared once sent from it.
    pub(super) in_reinject_queue: bool,
    /// Reinjected after a subflow's timeout or close on the out-of-tree stack (its skbs'
    /// `MPTCP_REINJECT` mark): another subflow's timeout does not reinject it again.
    pub(super) reinjected: bool,
}

/// The data the application has written and the peer has not Data-ACKed.
pub struct DataQueue {
    pub(super) una: u64,
    pub(super) segs: VecDeque<DataSegState>,
    /// No never-sent segment lies below this.
    pub(super) first_unsent: u64,
    /// Right edge of the peer's receive window, in bytes of the data sequence space.
    pub(super) right_edge: u64,
    /// Send buffer in segments (at least one).
    pub(super) sndbuf_segs: u64,
    total_segs: Option<u64>,
    /// Segments the application has written so far; `None`: it always has more.
    pub(super) app_segs: Option<u64>,
    /// The application's write size in segments ([`super::sender::DEFAULT_WRITE_CHUNK`] unless told);
    /// `None`: it fills the buffer at once.
    pub(super) write_chunk_segs: Option<u64>,
    /// The same in bytes (upstream's paged writes are to the byte).
    pub(super) write_chunk_bytes: Option<u64>,
    /// Upstream MPTCP's fragments (`mptcp_sendmsg`): writes fill pages; `None` elsewhere.
    pub(super) frags: Option<Frags>,
    last_len: u32,
    /// Payload of a full segment (`wire::mss`).
    mss: u32,
}

impl DataQueue {
    pub(super) fn new(mss: u32, sndbuf: Bytes, total: Option<Bytes>, rwnd: Bytes) -> DataQueue {
        let m = mss as u64;
        let total_segs = total.map(|b| b.0.div_ceil(m));
        let last_len = total.map_or(mss, |b| match b.0 % m {
            0 => mss,
            r => r as u32,
        });
        DataQueue {
            una: 0,
            segs: VecDeque::new(),
            first_unsent: 0,
            right_edge: rwnd.0,
            sndbuf_segs: (sndbuf.0 / m).max(1),
            total_segs,
            app_segs: None,
            write_chunk_segs: None,
            write_chunk_bytes: None,
            frags: None,
            last_len,
            mss,
        }
    }

    /// Payload bytes of a full data segment.
    pub fn mss(&self) -> u32 {
        self.mss
    }
    /// Byte offset of data segment `dseq` in the stream.
    pub fn offset(&self, dseq: u64) -> u64 {
        dseq * self.mss as u64
    }

    pub fn una(&self) -> u64 {
        self.una
    }
    pub fn written_end(&self) -> u64 {
        self.una + self.segs.len() as u64
    }
    /// Payload bytes of data segment `dseq`, Data-ACKed or not: a full segment but for a
    /// finite transfer's last one.
    #[inline]
    pub fn seg_len(&self, dseq: u64) -> u32 {
        match self.get(dseq) {
            Some(s) => s.len,
            None if Some(dseq + 1) == self.total_segs => self.last_len,
            None => self.mss,
        }
    }
    pub fn get(&self, dseq: u64) -> Option<&DataSegState> {
        dseq.checked_sub(self.una)
            .and_then(|i| self.segs.get(i as usize))
    }
    pub(super) fn get_mut(&mut self, dseq: u64) -> Option<&mut DataSegState> {
        dseq.checked_sub(self.una)
            .and_then(|i| self.segs.get_mut(i as usize))
    }
    pub fn unsent(&self) -> impl Iterator<Item = u64> + '_ {
        let from = self.first_unsent.max(self.una);
        (from..self.written_end())
            .filter(|&d| self.segs[(d - self.una) as usize].sent_on.is_empty())
    }
    pub fn in_window(&self, dseq: u64) -> bool {
        let len = self.get(dseq).map_or(self.mss, |s| s.len) as u64;
        self.offset(dseq) + len <= self.right_edge
    }
    /// The application cannot write: more than two thirds of the buffer hold data
    /// (`sk_stream_wspace < sk_stream_min_wspace`, when Linux sets SOCK_NOSPACE).
    pub fn sndbuf_full(&self) -> bool {
        3 * self.segs.len() as u64 > 2 * self.sndbuf_segs
    }
    /// Resizes the send buffer (autotuning only grows it); whether it grew.
    pub(super) fn set_sndbuf(&mut self, bytes: u64) -> bool {
        let grew = bytes >= (self.sndbuf_segs + 1) * self.mss as u64;
        if grew {
            self.sndbuf_segs = bytes / self.mss as u64;
        }
        grew
    }
    /// Sets the send buffer, smaller too (a subflow's buffer left with it).
    pub(super) fn resize_sndbuf(&mut self, bytes: u64) {
        self.sndbuf_segs = (bytes / self.mss as u64).max(1);
    }
    pub fn sndbuf_bytes(&self) -> u64 {
        self.sndbuf_segs * self.mss as u64
    }
    /// A finite transfer whose last segment has been written.
    pub fn all_written(&self) -> bool {
        self.total_segs.is_some_and(|t| self.written_end() >= t)
    }
    /// The end, in bytes of the stream, of the data fragment holding stream byte `byte`
    /// (upstream's `mptcp_data_frag`; a fixed grid of [`crate::conn::dfrag::DFRAG_BYTES`]
    /// where the stack keeps none).
    #[inline]
    pub fn frag_end(&self, byte: u64) -> u64 {
        use crate::conn::dfrag::DFRAG_BYTES;
        match &self.frags {
            Some(f) => f.end_of(byte),
            None => (byte / DFRAG_BYTES + 1) * DFRAG_BYTES,
        }
    }
    /// Byte offset of the first never-sent segment.
    pub fn first_unsent_offset(&self) -> u64 {
        self.offset(self.unsent().next().unwrap_or(self.written_end()))
    }
    pub fn right_edge(&self) -> u64 {
        self.right_edge
    }
    /// Every byte has been written and Data-ACKed.
    pub fn finished(&self) -> bool {
        self.total_segs.is_some_and(|t| self.una >= t)
    }

    /// The application, woken once the buffer is writable, fills it; or, writing
    /// `write_chunk_segs` at a time, writes chunks while the socket says it is writable
    /// (below two thirds full), so the buffer ends up between 2/3 and 2/3 + a chunk full.
    ///
    /// `sent_end`: every segment below it has been handed to a subflow (the fragments'
    /// `msk->first_pending`).
    pub(super) fn write(&mut self, sent_end: u64) {
        if self.sndbuf_full() {
            return;
        }
        if self.frags.is_some() {
            return self.write_pages(sent_end);
        }
        let mut end = self.una + self.sndbuf_segs;
        if let Some(chunk) = self.write_chunk_segs {
            // The chunks it takes to pass 2/3: 3 x len > 2 x sndbuf.
            let held = self.segs.len() as u64;
            let need = (2 * self.sndbuf_segs / 3 + 1).saturating_sub(held);
            let chunks = need.div_ceil(chunk).max(1);
            end = end.min(self.written_end() + chunks * chunk);
        }
        if let Some(t) = self.total_segs {
            end = end.min(t);
        }
        if let Some(a) = self.app_segs {
            end = end.min(a);
        }
        self.extend_to(end);
    }

    /// Upstream's `mptcp_sendmsg` ([`crate::conn::dfrag`]): each `send()` of a chunk copies it
    /// a page at a time while the buffer is below `sk_sndbuf` before the piece (so the last
    /// piece may take the buffer past it by up to a page), and the application sends while
    /// the socket is writable. The writes are the application's to the byte: a write that
    /// ends inside a segment leaves that segment to the next one (the subflows' skbs grow
    /// across writes), so the fragments fall where the kernel's do.
    fn write_pages(&mut self, sent_end: u64) {
        let mss = u64::from(self.mss);
        let mut limit = u64::MAX;
        if let Some(t) = self.total_segs {
            // A file's bytes: its last segment may be short (an empty one has none).
            let bytes = t
                .checked_sub(1)
                .map_or(0, |w| w * mss + u64::from(self.last_len));
            limit = limit.min(bytes);
        }
        if let Some(a) = self.app_segs {
            limit = limit.min(a * mss);
        }
        let una_byte = self.offset(self.una);
        let sndbuf = self.sndbuf_bytes();
        let chunk = self.write_chunk_bytes;
        let Some(frags) = self.frags.as_mut() else {
            return;
        };
        let mut pos = frags.end();
        // The bytes of a segment not yet whole count as handed out with the segments
        // before them (the kernel pushes them, and its next write grows their skb).
        let mut pending = sent_end < pos / mss;
        // A `send()` at a time while the socket is writable (`sk_stream_is_writeable`). The
        // held bytes count whole segments from the Data ACK, which a file's short last
        // segment can take past the bytes written.
        while pos < limit && 3 * pos.saturating_sub(una_byte) <= 2 * sndbuf {
            let mut left = chunk.unwrap_or(u64::MAX);
            while left > 0 && pos < limit && pos.saturating_sub(una_byte) < sndbuf {
                let n = frags.copy(left.min(limit - pos), pending, una_byte >= pos);
                pos += n;
                left -= n;
                pending = true;
            }
            if chunk.is_none() {
                break;
            }
        }
        // All written: a file's short last segment is whole (an application's limit is whole
        // segments anyway).
        let to = if pos >= limit {
            pos.div_ceil(mss)
        } else {
            pos / mss
        };
        self.extend_to(to);
    }

    /// Appends fresh segments up to (not including) `end`.
    fn extend_to(&mut self, end: u64) {
        let from = self.written_end();
        if from >= end {
            return;
        }
        let fresh = |len| DataSegState {
            len,
            sent_on: SubflowSet::EMPTY,
            first_sent: Time::ZERO,
            transmissions: 0,
            retransmissions: 0,
            in_reinject_queue: false,
            reinjected: false,
        };
        // Full segments in one extend (one capacity check, not one per segment); a finite
        // transfer's last segment, if among them, has its own length.
        let last = self.total_segs.filter(|&t| t == end);
        let full = end - from - u64::from(last.is_some());
        self.segs
            .extend(std::iter::repeat_n(fresh(self.mss), full as usize));
        if last.is_some() {
            self.segs.push_back(fresh(self.last_len));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_upstream_write_the_buffer_cuts_short_still_fills_its_page() {
        use crate::conn::dfrag::{Frags, DFRAG_BYTES};
        // `mptcp_sendmsg` looks at the buffer only before each page's piece: on Linux 6.18 the
        // lab's first write is 65,456 bytes, two whole fragments, past a 50,176-byte buffer
        // (docs/experiments/dfrag-kernel.json), where stopping at the buffer writes 35
        // segments.
        let mut q = DataQueue::new(1424, Bytes(50_176), None, Bytes(1 << 30));
        q.write_chunk_segs = Some(184);
        q.write_chunk_bytes = Some(262_144);
        q.frags = Some(Frags::default());
        q.write(0);
        assert_eq!(q.frags.as_ref().unwrap().end(), 2 * DFRAG_BYTES);
        // Whole segments: the 46th waits for the next write to fill it.
        assert_eq!(q.written_end(), 2 * DFRAG_BYTES / 1424);
    }

    #[test]
    fn an_upstream_file_s_short_last_segment_and_an_empty_file_write_what_they_hold() {
        use crate::conn::dfrag::Frags;
        let paged = |total: u64| {
            let mut q = DataQueue::new(1424, Bytes(1 << 20), Some(Bytes(total)), Bytes(1 << 30));
            q.frags = Some(Frags::default());
            q
        };
        let mut empty = paged(0);
        empty.write(0);
        assert_eq!(empty.written_end(), 0);
        // 2,000 bytes: a full segment and one of 576, all of it written and then acknowledged;
        // the held bytes count whole segments from the Data ACK, past the 2,000 written.
        let mut short = paged(2000);
        short.write(0);
        assert_eq!(short.written_end(), 2);
        assert_eq!(short.seg_len(1), 576);
        short.segs.clear();
        short.una = 2;
        short.write(2);
        assert_eq!(short.written_end(), 2);
    }

    fn queue(chunk: Option<u64>) -> DataQueue {
        let mut q = DataQueue::new(1424, Bytes(2999 * 1424), None, Bytes(1 << 30));
        q.write_chunk_segs = chunk;
        q
    }

    #[test]
    fn a_chunked_writer_stops_past_two_thirds_a_filling_one_at_the_top() {
        let mut full = queue(None);
        full.write(0);
        assert_eq!(full.segs.len(), 2999);
        // 256 KiB chunks (184 segments): written while at most 2/3 full (1,999 of 2,999).
        let mut chunked = queue(Some(184));
        chunked.write(0);
        let held = chunked.segs.len() as u64;
        assert!(held > 2 * 2999 / 3 && held <= 2 * 2999 / 3 + 184, "{held}");
        assert!(chunked.sndbuf_full());
        // An ACK of 500 segments: below 2/3 again, so chunks until past it.
        chunked.una += 500;
        chunked.segs.drain(..500);
        chunked.write(0);
        let held = chunked.segs.len() as u64;
        assert!(held > 2 * 2999 / 3 && held <= 2 * 2999 / 3 + 184, "{held}");
    }
}

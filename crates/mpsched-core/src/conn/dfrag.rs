//! Upstream MPTCP's data fragments (`struct mptcp_data_frag`), as `mptcp_sendmsg` carves
//! them out of the application's writes.
//!
//! A write is copied into 32-KiB page fragments (`SKB_FRAG_PAGE_ORDER`), one piece per page
//! at most, checking the send buffer only before each piece (`sk_stream_memory_free`), so a
//! write that meets a full buffer still fills the page it is in. A piece grows the tail
//! fragment when that fragment still has data not handed to a subflow (`msk->first_pending`)
//! and ends where the page's used part ends (`mptcp_frag_can_collapse_to`); otherwise it
//! starts a fragment of its own, its 40-byte header placed in the page first (aligned to 8:
//! `mptcp_carve_data_frag`). A page too full for a header and 32 bytes is replaced by a new
//! one (`mptcp_page_frag_refill`), and a page whose fragments have all been freed is used
//! again from its start (`skb_page_frag_refill`: the socket holds the last reference).
//!
//! So fragments are 32,728 bytes (`DFRAG_BYTES`) while the application writes faster than
//! the subflows take its data, and each write that finds everything handed out starts a
//! fragment in the middle of a page: the boundaries move 40 bytes earlier in the stream. On
//! Linux 6.18 (`mpsched emulate scenarios/wifi-outage.toml --scheduler linux --seed 1
//! --kernel-trace`, the ends of its `mptcp_sendmsg_frag` mappings that a later call extended)
//! the boundaries lie at multiples of 32,728 for the first 400 KB, move by 40 bytes eight
//! times over the next 6 MB, keep still to 34 MB and then move 40 bytes with each 256-KiB write
//! for 24 MB. A fragment's end is where the kernel stops a burst to a subflow
//! (`__subflow_push_pending`) and where a firing of the connection's timer stops resending
//! (`__mptcp_retrans`), so the model keeps the kernel's boundaries, not a fixed grid.

use std::collections::VecDeque;

/// A page fragment (`SKB_FRAG_PAGE_ORDER`).
pub const PAGE_BYTES: u64 = 32_768;
/// `sizeof(struct mptcp_data_frag)` at the start of each fragment's piece of a page.
pub const DFRAG_HEADER: u64 = 40;
/// The data of a fragment that has a page to itself. On Linux 6.18 (`mpsched emulate
/// scenarios/wifi-outage.toml --scheduler linux --kernel-trace`, its `mptcp_sendmsg_frag`
/// events after each `mptcp_rtx_timer_fire`) the firings resent 22,736 bytes at 0.488 s,
/// 11,344 at 5.948 s, and 32,728 at 6.52, 7.10 and 7.67 s, each from the Data ACK to its
/// fragment's end; their sum, 132,264, is the run's `bytes_retrans`, and
/// `MPTcpExtMPTCPRetrans` counted 5.
pub const DFRAG_BYTES: u64 = PAGE_BYTES - DFRAG_HEADER;
/// `mptcp_page_frag_refill`: a page keeps serving while a header and 32 bytes still fit.
const REFILL_MIN: u64 = 32 + DFRAG_HEADER;

/// The connection's fragments: where each one starts in the data stream, and the page the
/// next write is copied into.
#[derive(Clone, Debug)]
pub struct Frags {
    /// Stream offsets where fragments start, oldest first; the first is the head fragment's
    /// (the one holding the Data ACK) once `forget_below` has run.
    starts: VecDeque<u64>,
    /// Bytes of the current page in use (`page_frag.offset`).
    page_offset: u64,
    /// Bytes written so far: the end of the tail fragment.
    end: u64,
}

impl Default for Frags {
    fn default() -> Self {
        Frags {
            starts: VecDeque::new(),
            // No page yet: the first piece takes a new one.
            page_offset: PAGE_BYTES,
            end: 0,
        }
    }
}

impl Frags {
    /// Bytes written so far.
    pub fn end(&self) -> u64 {
        self.end
    }

    /// Copies one piece of a write, at most `max` bytes and at most to the page's end;
    /// returns the bytes copied. `pending`: some written data is not yet handed to a subflow.
    /// `all_acked`: every byte written has been Data-ACKed (the page's fragments are freed).
    pub fn copy(&mut self, max: u64, pending: bool, all_acked: bool) -> u64 {
        if max == 0 {
            return 0;
        }
        let collapse = pending && self.page_offset < PAGE_BYTES && !self.starts.is_empty();
        if !collapse {
            if all_acked || self.page_offset + REFILL_MIN > PAGE_BYTES {
                self.page_offset = 0;
            }
            self.page_offset = self.page_offset.next_multiple_of(8) + DFRAG_HEADER;
            self.starts.push_back(self.end);
        }
        let n = max.min(PAGE_BYTES - self.page_offset);
        self.page_offset += n;
        self.end += n;
        n
    }

    /// The end of the fragment holding stream byte `byte`: the next fragment's start, or
    /// the bytes written so far for the tail fragment.
    #[inline]
    pub fn end_of(&self, byte: u64) -> u64 {
        let i = self.starts.partition_point(|&s| s <= byte);
        self.starts.get(i).copied().unwrap_or(self.end)
    }

    /// Forgets the fragments wholly below stream byte `una` (Data-ACKed and freed).
    pub fn forget_below(&mut self, una: u64) {
        while self.starts.len() > 1 && self.starts[1] <= una {
            self.starts.pop_front();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Writes `bytes` as the kernel copies one `send()`: piece by piece.
    fn write(f: &mut Frags, mut bytes: u64, pending: bool, all_acked: bool) {
        let mut pending = pending;
        while bytes > 0 {
            bytes -= f.copy(bytes, pending, all_acked && !pending);
            pending = true;
        }
    }

    #[test]
    fn while_data_waits_each_page_holds_one_fragment() {
        let mut f = Frags::default();
        // The load generator's 256-KiB writes, each finding data still pending.
        write(&mut f, 262_144, false, true);
        write(&mut f, 262_144, true, false);
        for k in 1..16 {
            assert_eq!(f.end_of(k * DFRAG_BYTES - 1), k * DFRAG_BYTES);
        }
        assert_eq!(f.end_of(16 * DFRAG_BYTES), 2 * 262_144);
    }

    #[test]
    fn a_write_that_finds_everything_handed_out_moves_the_boundaries_40_bytes_earlier() {
        let mut f = Frags::default();
        write(&mut f, 262_144, false, true);
        // 262,144 = 8 x 32,728 + 320: the ninth page holds 320 bytes after its header. The
        // next write starts a fragment behind them, its header at 360, so that fragment
        // holds 32,768 - 400 bytes and the ones after it whole pages.
        write(&mut f, 262_144, false, false);
        let first = 262_144;
        assert_eq!(f.end_of(first - 1), first);
        assert_eq!(f.end_of(first), first + 32_368);
        let shifted = first + 32_368 + DFRAG_BYTES;
        assert_eq!(f.end_of(first + 32_368), shifted);
        // Mod 32,728 the boundaries sit 40 bytes below where they were: the kernel trace's
        // 32,448 -> 32,408 -> 32,368 steps.
        assert_eq!((first + 32_368) % DFRAG_BYTES, DFRAG_BYTES - 40);
    }

    #[test]
    fn a_page_whose_data_is_all_acked_is_used_again_from_its_start() {
        let mut f = Frags::default();
        write(&mut f, 1_000, false, true);
        write(&mut f, 1_000, false, true);
        // The second write's fragment starts a page of its own: a whole 32,728 bytes.
        write(&mut f, 40_000, true, false);
        assert_eq!(f.end_of(1_000), 1_000 + DFRAG_BYTES);
    }

    #[test]
    fn a_page_without_room_for_a_header_and_32_bytes_is_replaced() {
        let mut f = Frags::default();
        // 32,728 - 50 bytes leave 50 bytes of page: too few for a header and 32 bytes.
        write(&mut f, DFRAG_BYTES - 50, false, true);
        write(&mut f, 100, false, false);
        assert_eq!(f.end_of(0), DFRAG_BYTES - 50);
        assert_eq!(f.end_of(DFRAG_BYTES - 50), DFRAG_BYTES + 50);
        // With 80 bytes left, one fragment of 40 bytes fits behind a header.
        let mut g = Frags::default();
        write(&mut g, DFRAG_BYTES - 80, false, true);
        write(&mut g, 100, false, false);
        assert_eq!(g.end_of(DFRAG_BYTES - 80), DFRAG_BYTES - 40);
    }

    #[test]
    fn forgetting_keeps_the_head_fragment() {
        let mut f = Frags::default();
        write(&mut f, 5 * DFRAG_BYTES, false, true);
        f.forget_below(2 * DFRAG_BYTES + 5);
        assert_eq!(f.end_of(2 * DFRAG_BYTES + 5), 3 * DFRAG_BYTES);
        assert_eq!(f.starts.len(), 3);
    }
}

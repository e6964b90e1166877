//! The receiving host's MPTCP connection: subflow reassembly feeds a connection-level reorder
//! queue; one receive buffer is shared by all subflows (RFC 8684 3.3.4).
//!
//! - The application reads in-order data at once; out-of-order data waits in the reorder
//!   queue (and, below a subflow-level hole, in the subflow's queue). What each ACK advertises
//!   is Linux's window (`rcvwin`): a share of the free buffer, opening gradually, with the
//!   buffer autotuned; it is relative to the Data ACK and its right edge never moves left
//!   (RFC 9293 3.8.6.2.2, Linux `tcp_select_window`, MPTCP `mptcp_set_rwin`).
//! - Every ACK carries the cumulative Data ACK (RFC 8684 3.3.2).
//! - Filling a connection-level hole frees much of the buffer at once, but no ACK is owed for
//!   it: as Linux's `mptcp_cleanup_rbuf` after the read, a subflow sends a window update only
//!   if it owes an ACK for more than a segment, or if its window at least doubles and was at
//!   most half the buffer's (`tcp_cleanup_rbuf`); the others tell the sender with their next
//!   ACK.
//! - Data beyond the window is dropped (and ACKed), as Linux does when the buffer is full.

use crate::batch::Batch;
use crate::conn::rcvwin::{linux_ratio, RcvWindow, RcvWindowConfig};
use crate::conn::stats::Histogram;
use crate::conn::Stack;
use crate::jiffies::Jiffies;
use crate::packet::{Ack, Packet, Payload, SackBlock, MAX_SACK_BLOCKS};
use crate::subflow::rx::{AckNeed, AckPolicy, RxSeg};
use crate::subflow::SubflowRx;
use crate::time::{Dur, Time};
use crate::trace::DeliveryTrace;
use crate::units::{wire, Bytes};
use std::collections::VecDeque;

/// `Receiver::gens` of a closed subflow.
const CLOSED: u16 = u16::MAX;

#[derive(Clone, Debug)]
pub struct ReceiverConfig {
    pub mptcp: bool,
    /// `tcp_rmem[2]`: the largest the receive buffer gets (bytes of memory).
    pub rcvbuf: Bytes,
    /// `tcp_rmem[1]`: where autotuning starts.
    pub rcvbuf_initial: Bytes,
    /// Linux receive-buffer autotuning; otherwise the buffer is `rcvbuf` from the start.
    pub rcvbuf_autotune: bool,
    /// Payload advertised per 256 bytes of buffer; `None`: Linux's for 1,500-byte packets on
    /// a TUN or veth device (`rcvwin::linux_ratio`).
    pub window_ratio: Option<u32>,
    pub subflows: usize,
    /// Which Linux MPTCP receives.
    pub stack: Stack,
    /// Bytes expected in all (a file); `None` for bulk.
    pub total: Option<Bytes>,
    /// The client kernel's ticks, on which its delayed ACKs run.
    pub jiffies: Jiffies,
    /// How often in-order segments are ACKed (`AckPolicy::LINUX` but in the real transport's
    /// opt-in `--ack-every`).
    pub ack_policy: AckPolicy,
    /// When the application reads what came in order (what it has not read counts against
    /// the buffer, as a socket's receive queue does: `sk_rmem_alloc`).
    pub reader: Reader,
    pub trace: bool,
}

/// When the receiving application reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reader {
    /// At once, after the ACK that data called for: Linux's order (`tcp_rcv_established`
    /// queues the segment and sends its ACK in softirq, the woken reader's `recvmsg` comes
    /// after), so an ACK advertises the buffer with its own segment still in it, and the
    /// read's window update goes out as `tcp_cleanup_rbuf` / `mptcp_cleanup_rbuf` decide.
    AfterAck,
    /// At once, before the ACK: the model of the out-of-tree MPTCP (its ACK rules were
    /// matched to published traces with this order; no kernel of it here to measure).
    BeforeAck,
    /// When it chooses, through `app_read` (the real transport's client).
    OnItsOwn,
}

#[derive(Clone, Copy, Debug)]
struct Held {
    len: u32,
    arrival: Time,
    subflow: u8,
}

#[derive(Clone, Debug, Default)]
pub struct ReceiverStats {
    pub delivered_bytes: u64,
    /// Bytes delivered to the application, by the subflow their delivered copy came on.
    pub delivered_by_subflow: Vec<u64>,
    /// Per data segment: delivery to the application minus first arrival (ns).
    pub ooo_delay_ns: Histogram,
    pub duplicate_segments: u64,
    pub beyond_window_drops: u64,
    /// Segments of a closed subflow, or of its earlier incarnation, that arrived after it.
    pub closed_subflow_drops: u64,
    pub acks_sent: u64,
    /// Per subflow: ACKs of a second segment held back because the window would have shrunk
    /// (out-of-tree MPTCP only).
    pub held_acks: Vec<u64>,
    /// Peak bytes held out of order.
    pub peak_held_bytes: u64,
    /// The connection-level reorder queue integrated over time (byte x ns), up to
    /// `reorder_since`, and its size since then.
    pub reorder_area: u128,
    pub reorder_since: Time,
    pub reorder_now: u64,
    /// When the application last received bytes in order (`None`: never yet).
    pub last_delivery: Option<Time>,
    /// The longest time between two in-order deliveries to the application, and when it
    /// began: how long a handover or an outage stalled the stream.
    pub longest_stall: Dur,
    pub longest_stall_from: Time,
}

impl ReceiverStats {
    /// The longest stall of in-order delivery up to `end`, with when it began; the time since
    /// the last delivery counts when `open` (the transfer was still going at `end`).
    pub fn longest_stall(&self, end: Time, open: bool) -> (Dur, Time) {
        match self.last_delivery {
            Some(last) if open && end > last && end - last > self.longest_stall => {
                (end - last, last)
            }
            _ => (self.longest_stall, self.longest_stall_from),
        }
    }

    fn delivered_at(&mut self, now: Time) {
        if let Some(last) = self.last_delivery {
            if now - last > self.longest_stall {
                self.longest_stall = now - last;
                self.longest_stall_from = last;
            }
        }
        self.last_delivery = Some(now);
    }

    /// Time-weighted mean size of the connection-level reorder queue over [0, end].
    pub fn mean_reorder_bytes(&self, end: Time) -> f64 {
        if end == Time::ZERO {
            return 0.0;
        }
        let tail =
            self.reorder_now as u128 * end.saturating_since(self.reorder_since).as_nanos() as u128;
        (self.reorder_area + tail) as f64 / end.as_nanos() as f64
    }

    fn note_reorder(&mut self, now: Time, bytes: u64) {
        if bytes != self.reorder_now {
            let span = now.saturating_since(self.reorder_since).as_nanos() as u128;
            self.reorder_area += self.reorder_now as u128 * span;
            self.reorder_since = now;
            self.reorder_now = bytes;
        }
    }
}

pub struct Receiver {
    cfg: ReceiverConfig,
    /// Payload of a full data segment (`wire::mss`).
    mss: u64,
    window: RcvWindow,
    /// Per subflow: the window its last ACK advertised (`rcv_wnd`).
    adv_window: Vec<u64>,
    /// The window the last ACK on any subflow advertised (`msk->old_wspace`).
    old_wspace: u64,
    subflows: Vec<SubflowRx>,
    data_rcv_nxt: u64,
    /// Connection-level out-of-order queue; index = dseq - data_rcv_nxt - 1.
    ooo: VecDeque<Option<Held>>,
    ooo_count: u64,
    ooo_bytes: u64,
    /// Bytes in the subflows' out-of-order queues, summed (kept as each arrival changes its
    /// subflow's: `held_bytes` is read for every segment).
    subflow_ooo_bytes: u64,
    /// In-order bytes the application has not read yet.
    unread: u64,
    right_edge: u64,
    out: Batch<Packet>,
    complete_at: Option<Time>,
    /// Each subflow's incarnation (`Packet::gen`); `CLOSED` while it is closed, which no
    /// packet's generation matches.
    gens: Vec<u16>,
    /// Each subflow's current incarnation, closed or not.
    incarnations: Vec<u8>,
    pub stats: ReceiverStats,
    pub trace: Option<DeliveryTrace>,
}

fn subflow_rx(i: usize, cfg: &ReceiverConfig) -> SubflowRx {
    let mut rx = SubflowRx::new(i as u8);
    rx.set_jiffies(cfg.jiffies);
    // SACK compression came with Linux 4.18: the out-of-tree kernel the papers ran (v0.92,
    // Linux 4.1) ACKs every arrival out of order.
    rx.set_ack_policy(AckPolicy {
        comp_sack: cfg.ack_policy.comp_sack && cfg.stack != Stack::OutOfTree,
        ..cfg.ack_policy
    });
    rx.set_mptcp(cfg.mptcp);
    rx
}

impl Receiver {
    pub fn new(cfg: ReceiverConfig) -> Receiver {
        let subflows = (0..cfg.subflows).map(|i| subflow_rx(i, &cfg)).collect();
        let cfg_subflows = cfg.subflows;
        let mss = wire::mss(cfg.mptcp);
        let window = RcvWindow::new(RcvWindowConfig {
            rcvbuf_max: cfg.rcvbuf.0,
            rcvbuf_initial: cfg.rcvbuf_initial.0,
            autotune: cfg.rcvbuf_autotune,
            ratio: cfg
                .window_ratio
                .unwrap_or(match cfg.stack {
                    Stack::Upstream => linux_ratio(mss),
                    // Linux 4.x: tcp_adv_win_scale = 1.
                    Stack::OutOfTree => 128,
                })
                .clamp(1, 256),
            mss,
            mptcp: cfg.mptcp,
            out_of_tree: cfg.stack == Stack::OutOfTree,
            subflows: cfg.subflows,
        });
        Receiver {
            mss: mss as u64,
            right_edge: window.initial_window(),
            adv_window: vec![window.initial_window(); cfg.subflows],
            old_wspace: window.initial_window(),
            window,
            stats: ReceiverStats {
                delivered_by_subflow: vec![0; cfg.subflows],
                held_acks: vec![0; cfg.subflows],
                ..Default::default()
            },
            trace: cfg.trace.then(DeliveryTrace::default),
            cfg,
            subflows,
            data_rcv_nxt: 0,
            ooo: VecDeque::new(),
            ooo_count: 0,
            ooo_bytes: 0,
            subflow_ooo_bytes: 0,
            unread: 0,
            out: Batch::default(),
            complete_at: None,
            gens: vec![0; cfg_subflows],
            incarnations: vec![0; cfg_subflows],
        }
    }

    /// Subflow `i` is closed (its address removed): what it held out of order goes with it
    /// (the sender sends it again on the others), and its segments still on the way find no
    /// socket.
    pub fn close_subflow(&mut self, i: usize) {
        if i < self.subflows.len() && self.gens[i] != CLOSED {
            self.incarnations[i] = self.incarnations[i].wrapping_add(1);
            self.gens[i] = CLOSED;
            self.window.list(i, false);
            self.subflow_ooo_bytes -= self.subflows[i].ooo_bytes();
            self.subflows[i] = subflow_rx(i, &self.cfg);
        }
    }

    /// Subflow `i` opens again as a new socket (MP_JOIN from the returning address).
    pub fn open_subflow(&mut self, i: usize) {
        if i < self.subflows.len() && self.gens[i] == CLOSED {
            self.gens[i] = u16::from(self.incarnations[i]);
            self.subflow_ooo_bytes -= self.subflows[i].ooo_bytes();
            self.subflows[i] = subflow_rx(i, &self.cfg);
            self.window.reset_subflow(i);
            self.adv_window[i] = self.window.initial_window();
        }
    }

    pub fn data_rcv_nxt(&self) -> u64 {
        self.data_rcv_nxt
    }
    pub fn complete_at(&self) -> Option<Time> {
        self.complete_at
    }
    pub fn subflows(&self) -> &[SubflowRx] {
        &self.subflows
    }
    /// Bytes held out of order, at both levels.
    pub fn held_bytes(&self) -> u64 {
        debug_assert_eq!(
            self.subflow_ooo_bytes,
            self.subflows.iter().map(|s| s.ooo_bytes()).sum::<u64>()
        );
        self.ooo_bytes + self.subflow_ooo_bytes
    }
    /// Bytes waiting in the connection-level reorder queue (OTIAS Fig. 5).
    pub fn reorder_bytes(&self) -> u64 {
        self.ooo_bytes
    }
    /// The window the handshake advertised: what the peer may send before the first ACK.
    pub fn initial_window(&self) -> u64 {
        self.window.initial_window()
    }
    /// The receive buffer now (bytes of memory; autotuning grows it).
    pub fn rcvbuf(&self) -> u64 {
        self.window.rcvbuf()
    }
    /// In-order bytes the application has not read yet (0 between segments unless the
    /// application reads on its own).
    pub fn unread_bytes(&self) -> u64 {
        self.unread
    }
    /// Bytes that count against the buffer: connection-level data (out of order and not yet
    /// read), and for plain TCP the subflow's out-of-order queue.
    fn charged_bytes(&self) -> u64 {
        self.unread
            + if self.window.counts_subflow_queues() {
                self.held_bytes()
            } else {
                self.ooo_bytes
            }
    }

    /// The application read `bytes` of what came in order: they leave the buffer,
    /// autotuning counts them (`tcp_rcv_space_adjust` runs from `recvmsg`), and a window that
    /// the read opened "significantly" is sent at once (`tcp_cleanup_rbuf` after `recvmsg`).
    pub fn app_read(&mut self, now: Time, bytes: u64) {
        if self.take_read(now, bytes) {
            self.cleanup_rbuf(now);
        }
    }

    /// The read itself: whether anything was read.
    fn take_read(&mut self, now: Time, bytes: u64) -> bool {
        let bytes = bytes.min(self.unread);
        if bytes == 0 {
            return false;
        }
        self.unread -= bytes;
        if let Some(copied) = self.window.on_read(now, bytes, self.ooo_span()) {
            for j in 0..self.subflows.len() {
                let span = self.subflows[j].ooo_span_segments() * self.mss;
                self.window.follow(j, copied, span);
            }
        }
        true
    }

    /// Bytes from the Data ACK to the end of the connection-level out-of-order queue.
    fn ooo_span(&self) -> u64 {
        if self.ooo_count == 0 {
            0
        } else {
            (self.ooo.len() as u64 + 1) * self.mss
        }
    }

    /// This end opened subflow `i` (its SYN or MP_JOIN left): its socket is in the
    /// connection's list, whose least `scaling_ratio` the connection's window uses.
    pub fn subflow_opened(&mut self, i: usize) {
        self.window.list(i, true);
    }

    /// Subflow `i`'s handshake completed at this end (`tcp_init_transfer`), its RTT
    /// measured by it (zero: unknown).
    pub fn subflow_established(&mut self, i: usize, srtt: Dur) {
        self.window.establish(i);
        if let Some(sf) = self.subflows.get_mut(i) {
            sf.set_srtt(srtt);
        }
    }

    /// The receive buffer subflow `i`'s window is capped by: upstream MPTCP, the subflow
    /// socket's own; otherwise the connection's.
    pub fn subflow_rcvbuf(&self, i: usize) -> u64 {
        self.window
            .subflow_rcvbuf(i)
            .unwrap_or(self.window.rcvbuf())
    }
    /// Subflow `i`'s receiver RTT estimate (Linux `rcv_rtt_est`), which paces the buffer's
    /// growth; zero before its first sample.
    pub fn rcv_rtt(&self, i: usize) -> Dur {
        self.window.rcv_rtt(i)
    }
    fn out_of_tree(&self) -> bool {
        self.cfg.stack == Stack::OutOfTree
    }

    /// Whether subflow `i` ACKs a second unacknowledged segment now (`__tcp_ack_snd_check`).
    /// Upstream always does. The out-of-tree MPTCP does if `rcv_ssthresh` just grew (quick
    /// ACK) or the connection's window would not shrink; otherwise it holds the ACK back for
    /// the delayed-ACK timer, unless that is almost due.
    fn acks_second_segment(&mut self, now: Time, i: usize, grew: bool) -> bool {
        if !self.out_of_tree() || grew {
            return true;
        }
        if self.window.window(i, self.charged_bytes()) >= self.adv_window[i] {
            return true;
        }
        self.stats.held_acks[i] += 1;
        self.subflows[i].hold_ack(now)
    }

    /// The window this receiver advertises now.
    pub fn rwnd(&self) -> u64 {
        self.right_edge - self.data_rcv_nxt * self.mss
    }

    pub fn handle_data(&mut self, now: Time, pkt: &Packet) {
        let Payload::Data(seg) = pkt.payload else {
            return;
        };
        let i = pkt.subflow as usize;
        if self.gens.get(i) != Some(&u16::from(pkt.gen)) {
            self.stats.closed_subflow_drops += u64::from(i < self.subflows.len());
            return;
        }
        if seg.probe {
            self.send_ack(now, i);
            return;
        }
        if seg.dseq >= self.data_rcv_nxt && seg.dseq * self.mss + seg.len as u64 > self.right_edge {
            self.stats.beyond_window_drops += 1;
            self.send_ack(now, i);
            return;
        }
        let sf_held = self.subflows[i].ooo_bytes();
        let rcv_rtt = self.window.rcv_rtt(i);
        let need = self.subflows[i].on_segment(now, &seg, rcv_rtt);
        let sf_now = self.subflows[i].ooo_bytes();
        self.subflow_ooo_bytes = self.subflow_ooo_bytes - sf_held + sf_now;
        if sf_now > sf_held {
            let span = self.subflows[i].ooo_span_segments() * self.mss;
            self.window.on_subflow_ooo(i, span);
        }
        let charged = self.charged_bytes();
        let grew = self
            .window
            .on_segment(now, i, seg.len, seg.ts_ecr, charged, sf_now);
        let mut filled_hole = false;
        let delivered = self.stats.delivered_bytes;
        while let Some(rx) = self.subflows[i].poll_in_order() {
            filled_hole |= self.deliver(now, i as u8, rx);
        }
        if self.cfg.reader == Reader::BeforeAck {
            self.take_read(now, self.unread);
        }
        if self.stats.delivered_bytes != delivered {
            self.stats.delivered_at(now);
        }
        let held = self.held_bytes();
        self.stats.peak_held_bytes = self.stats.peak_held_bytes.max(held);
        self.stats.note_reorder(now, self.ooo_bytes);
        let ack = match need {
            AckNeed::Now => true,
            AckNeed::Compressed => false,
            AckNeed::Flush => {
                self.send_ack(now, i);
                self.subflows[i].after_flush(now, rcv_rtt) == AckNeed::Now
            }
            // `tcp_grow_window` sets `icsk_ack.quick` whenever it raises `rcv_ssthresh`: a
            // segment that grows the window is ACKed at once, on both kernels (not with the
            // transport's sparser ACK frequency).
            AckNeed::Delayed => grew && self.cfg.ack_policy.every <= 2,
            AckNeed::Second => self.acks_second_segment(now, i, grew),
        };
        if ack {
            self.send_ack(now, i);
        }
        let read = self.cfg.reader == Reader::AfterAck && self.take_read(now, self.unread);
        if filled_hole || read {
            self.cleanup_rbuf(now);
        }
    }

    /// Takes a segment that is in order at subflow level. Returns whether it filled a hole of
    /// the connection-level reorder queue.
    fn deliver(&mut self, now: Time, sf: u8, rx: RxSeg) -> bool {
        let held = Held {
            len: rx.len,
            arrival: rx.arrival,
            subflow: sf,
        };
        if rx.dseq < self.data_rcv_nxt {
            self.stats.duplicate_segments += 1;
            return false;
        }
        if rx.dseq > self.data_rcv_nxt {
            let idx = (rx.dseq - self.data_rcv_nxt - 1) as usize;
            if self.ooo.len() < idx {
                self.ooo.resize(idx, None);
            }
            if self.ooo.len() == idx {
                // The common case: the next segment above the hole.
                self.ooo.push_back(None);
            }
            if self.ooo[idx].is_some() {
                self.stats.duplicate_segments += 1;
            } else {
                self.ooo[idx] = Some(held);
                self.ooo_count += 1;
                self.ooo_bytes += rx.len as u64;
                self.window.on_connection_ooo(self.ooo_span());
            }
            return false;
        }
        let had_hole = self.ooo_count > 0;
        self.hand_to_application(now, held);
        if had_hole {
            while let Some(front) = self.ooo.pop_front() {
                let Some(h) = front else { break };
                self.ooo_count -= 1;
                self.ooo_bytes -= h.len as u64;
                self.hand_to_application(now, h);
            }
        }
        had_hole
    }

    fn hand_to_application(&mut self, now: Time, h: Held) {
        self.data_rcv_nxt += 1;
        self.unread += h.len as u64;
        self.stats.delivered_bytes += h.len as u64;
        self.stats.delivered_by_subflow[h.subflow as usize] += h.len as u64;
        self.stats.ooo_delay_ns.record((now - h.arrival).as_nanos());
        if let Some(t) = self.trace.as_mut() {
            t.subflow.push(h.subflow);
            t.len_bytes.push(h.len);
            t.first_received_ns.push(h.arrival.as_nanos());
            t.delivered_ns.push(now.as_nanos());
        }
        if self.complete_at.is_none()
            && self
                .cfg
                .total
                .is_some_and(|t| self.stats.delivered_bytes >= t.0)
        {
            self.complete_at = Some(now);
        }
    }

    /// `mptcp_cleanup_rbuf` after the application read what a filled hole released: which
    /// subflows send a window update now.
    fn cleanup_rbuf(&mut self, now: Time) {
        let charged = self.charged_bytes();
        let full = self.window.full_space();
        let space = full.saturating_sub(charged);
        let cleanup = space > 0 && space >= 2 * self.old_wspace;
        for j in 0..self.subflows.len() {
            let segments = self.subflows[j].unacked_segments();
            let unacked = u64::from(segments) * self.mss;
            // mptcp_subflow_could_cleanup: an ACK is owed for more than one segment (Linux's
            // every second one; the transport's `--ack-every N`: its N-th).
            let owed = self.subflows[j].delack_at().is_some()
                && segments >= self.cfg.ack_policy.every.max(2);
            if !(cleanup || owed) {
                continue;
            }
            // tcp_cleanup_rbuf: what the peer may still send on this subflow, against what
            // it would be told now.
            let now_window = self.adv_window[j].saturating_sub(unacked);
            let doubles = 2 * now_window <= full && {
                let new = self.window.window(j, charged);
                new > 0 && new >= 2 * now_window
            };
            if owed || doubles {
                self.send_ack(now, j);
            }
        }
    }

    fn send_ack(&mut self, now: Time, i: usize) {
        // The connection's right edge never moves left (mptcp_set_rwin raises a subflow's
        // smaller offer to it); a subflow moves it on only by its own window from the Data
        // ACK. A subflow whose own window is small does not carry its earlier, raised offer
        // past the edge when a filled hole moves the Data ACK on: in 1-8 s of the STMS lab at
        // 512 KiB on Linux 6.18 (runs/kb512-8-s1h, header trace), of LTE's 102 ACKs that
        // carried a Data ACK jump of 10 segments or more, 86 advertised the edge already
        // offered and 16 the Data ACK plus LTE's own 56 segments (rcv_ssthresh 80,106); the
        // carry would have moved the edge on by 10 or more in 96. Wi-Fi's next ACK, with its
        // own window of up to 211 segments, opens it.
        let window = self.window.window(i, self.charged_bytes());
        self.right_edge = self.right_edge.max(self.data_rcv_nxt * self.mss + window);
        let advertised = self.right_edge - self.data_rcv_nxt * self.mss;
        self.adv_window[i] = advertised;
        self.old_wspace = advertised;
        let sf = &mut self.subflows[i];
        let mut sack = [SackBlock { start: 0, end: 0 }; MAX_SACK_BLOCKS];
        // The most recent blocks first, as many as the option space leaves room for after a
        // D-SACK block (`tcp_options_write` writes `duplicate_sack` first).
        let room = wire::sack_blocks_fit(self.cfg.mptcp) - usize::from(sf.dsack());
        let all = sf.sack_blocks();
        let blocks = &all[..all.len().min(room).min(MAX_SACK_BLOCKS)];
        sack[..blocks.len()].copy_from_slice(blocks);
        let ack = Ack {
            ack: sf.rcv_nxt(),
            sack,
            sack_len: blocks.len() as u8,
            data_ack: self.data_rcv_nxt,
            rwnd: self.right_edge - self.data_rcv_nxt * self.mss,
            ts_val: now,
            ts_ecr: sf.ts_recent(),
            dsack: sf.dsack(),
        };
        sf.on_ack_sent();
        self.stats.acks_sent += 1;
        self.out
            .push(Packet::ack(i as u8, ack, self.cfg.mptcp).of_gen(self.incarnations[i]));
    }

    pub fn handle_timeout(&mut self, now: Time) {
        for i in 0..self.subflows.len() {
            if self.subflows[i].on_delack_timer(now) {
                self.send_ack(now, i);
            }
        }
    }

    pub fn poll_timeout(&self) -> Option<Time> {
        self.subflows.iter().filter_map(SubflowRx::timer_at).min()
    }

    pub fn poll_transmit(&mut self) -> Option<Packet> {
        self.out.pop()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::packet::DataSeg;

    /// A 128 KiB buffer, not autotuned: `rcv_ssthresh` reaches the free space after one
    /// segment, so from then on any data held shrinks the window.
    fn receiver(stack: Stack) -> Receiver {
        Receiver::new(ReceiverConfig {
            mptcp: true,
            rcvbuf: Bytes(128 << 10),
            rcvbuf_initial: Bytes(128 << 10),
            rcvbuf_autotune: false,
            window_ratio: None,
            subflows: 2,
            stack,
            total: None,
            jiffies: Jiffies::EXACT,
            ack_policy: AckPolicy::LINUX,
            reader: Reader::BeforeAck,
            trace: false,
        })
    }

    fn data(sf: u8, seq: u64, dseq: u64) -> Packet {
        let seg = DataSeg {
            seq,
            dseq,
            len: wire::MPTCP_MSS,
            ts_val: Time::ZERO,
            ts_ecr: Time::ZERO,
            probe: false,
        };
        Packet::data(sf, seg, true)
    }

    fn acks(r: &mut Receiver, sf: u8) -> Vec<Ack> {
        std::iter::from_fn(|| r.poll_transmit())
            .filter(|p| p.subflow == sf)
            .filter_map(|p| match p.payload {
                Payload::Ack(a) => Some(a),
                _ => None,
            })
            .collect()
    }

    /// Subflow 0 gets data segments 0 to 39 in order, then 41 to 60 while 40 (sent on
    /// subflow 1) is missing, one per millisecond. Returns the ACKs subflow 0 sent in that
    /// second phase.
    fn above_a_connection_level_hole(r: &mut Receiver) -> Vec<Ack> {
        let ms = |t: u64| Time(t * 1_000_000);
        for d in 0..40 {
            r.handle_data(ms(d), &data(0, d, d));
        }
        acks(r, 0);
        for d in 41..=60 {
            r.handle_data(ms(d), &data(0, d - 1, d));
        }
        acks(r, 0)
    }

    /// A subflow whose own `rcv_ssthresh` is small advertises the connection's right edge
    /// (`mptcp_set_rwin` raises its offer to it), but when its segment fills a
    /// connection-level hole its ACK does not carry that edge on by the Data ACK's jump: it
    /// advertises the edge already offered, or the Data ACK plus its own window if that
    /// reaches further. (Linux 6.18, the STMS lab at 512 KiB, `runs/kb512-8-s1h`: 86 of LTE's
    /// 102 ACKs with a jump of 10 segments or more stayed at the edge, 16 went to the Data
    /// ACK plus LTE's own 56 segments; the carry would have moved it on in 96.)
    #[test]
    fn a_subflow_s_ack_after_a_filled_hole_does_not_carry_the_edge_on_by_the_jump() {
        let ms = |t: u64| Time(t * 1_000_000);
        let mss = u64::from(wire::MPTCP_MSS);
        // 256 KiB, not autotuned: a subflow's rcv_ssthresh starts at half the buffer and grows
        // two segments per segment it takes.
        let mut r = Receiver::new(ReceiverConfig {
            rcvbuf: Bytes(256 << 10),
            rcvbuf_initial: Bytes(256 << 10),
            ..receiver(Stack::Upstream).cfg
        });
        // Subflow 0 opens the window to the whole buffer.
        for d in 0..100 {
            r.handle_data(ms(d), &data(0, d, d));
        }
        acks(&mut r, 0);
        let full = r.window.full_space();
        assert!(r.rwnd() + mss >= full, "{} of {full}", r.rwnd());
        // Subflow 1 takes one segment: its own threshold is far below, but it advertises the
        // connection's right edge.
        r.handle_data(ms(100), &data(1, 0, 100));
        let offer = acks(&mut r, 1).last().expect("an ACK").rwnd;
        assert!(offer + mss >= full, "{offer} of {full}");
        // Subflow 0 brings 30 segments above a hole that subflow 1 fills: the Data ACK jumps
        // past what the old right edge left room for beside subflow 1's own window.
        for d in 102..132 {
            r.handle_data(ms(d), &data(0, d - 2, d));
        }
        let last = *acks(&mut r, 0).last().expect("subflow 0's ACKs");
        let edge = last.data_ack * mss + last.rwnd;
        r.handle_data(ms(140), &data(1, 1, 101));
        let ack = *acks(&mut r, 1).last().expect("an ACK for the filled hole");
        assert_eq!(ack.data_ack, 132);
        // The edge already offered, or the Data ACK plus subflow 1's own window (its
        // threshold grew by two segments with the segment it took).
        let own = r.window.window(1, r.charged_bytes());
        let expected = own.max(edge - 132 * mss);
        assert_eq!(ack.rwnd, expected);
        // Carried over, its offer less the one segment it took since would reach further.
        let carried = offer - mss;
        assert!(expected + 10 * mss < carried, "{expected} {carried}");
    }

    /// Linux queues a segment and ACKs it before the reader's `recvmsg`: that ACK advertises
    /// the buffer with its own segment still in it (the simulator's upstream reader). The
    /// out-of-tree model reads first and advertises the whole buffer.
    #[test]
    fn an_ack_advertises_the_buffer_with_its_own_segment_unread_when_the_reader_comes_after() {
        let mss = u64::from(wire::MPTCP_MSS);
        for (reader, less) in [(Reader::AfterAck, mss), (Reader::BeforeAck, 0)] {
            let mut r = Receiver::new(ReceiverConfig {
                reader,
                ..receiver(Stack::Upstream).cfg
            });
            for d in 0..42 {
                r.handle_data(Time(d * 1_000_000), &data(0, d, d));
            }
            // The connection's ratio is the subflow's measured one by now.
            let full = r.window.full_space();
            let last = *acks(&mut r, 0)
                .last()
                .expect("an ACK for the second segment");
            assert_eq!(last.data_ack, 42, "{reader:?}");
            assert_eq!(last.rwnd, full - less, "{reader:?}");
            // Either way the application has read everything by the end of the arrival.
            assert_eq!(r.unread_bytes(), 0, "{reader:?}");
        }
    }

    #[test]
    fn what_the_application_has_not_read_closes_the_window_and_its_read_opens_it() {
        let ms = |t: u64| Time(t * 1_000_000);
        let mut r = Receiver::new(ReceiverConfig {
            reader: Reader::OnItsOwn,
            ..receiver(Stack::Upstream).cfg
        });
        let full = r.window.full_space();
        let mss = wire::MPTCP_MSS as u64;
        // In order but unread: each segment shrinks what the ACKs advertise beyond it.
        let mut d = 0;
        let mut last = None;
        while r.rwnd() >= mss && d < 1_000 {
            r.handle_data(ms(d), &data(0, d, d));
            d += 1;
            last = acks(&mut r, 0).last().copied().or(last);
        }
        assert_eq!(r.data_rcv_nxt(), d);
        assert_eq!(r.unread_bytes(), d * mss);
        // Everything the first window allowed arrived, and the right edge never moved on:
        // the peer may send nothing more until the application reads.
        let edge = last.expect("ACKs").rwnd + last.unwrap().data_ack * mss;
        assert!(
            edge <= full + mss,
            "right edge {edge} beyond the buffer's {full}"
        );
        assert!(
            d < 1_000 && d * mss <= edge && edge < (d + 1) * mss,
            "{d} segments, {edge}"
        );
        // Reading half of it opens the window at once: a window update goes out.
        r.app_read(ms(d), d * mss / 2);
        assert_eq!(r.unread_bytes(), d * mss - d * mss / 2);
        let update = acks(&mut r, 0);
        assert_eq!(update.len(), 1, "one window update");
        assert!(update[0].rwnd >= full / 3, "{} of {full}", update[0].rwnd);
        // The simulator's receiver reads at once: nothing is ever unread.
        let mut sim = receiver(Stack::Upstream);
        for d in 0..100 {
            sim.handle_data(ms(d), &data(0, d, d));
        }
        assert_eq!(sim.unread_bytes(), 0);
        assert!(sim.rwnd() >= full / 2);
    }

    #[test]
    fn the_mean_reorder_queue_is_weighted_by_time() {
        let mut st = super::ReceiverStats::default();
        let s = |x: u64| Time(x * 1_000_000_000);
        st.note_reorder(s(1), 100);
        st.note_reorder(s(2), 100); // no change
        st.note_reorder(s(3), 0);
        st.note_reorder(s(5), 40);
        // 100 bytes for 2 s, then 0 for 2 s, then 40 bytes for the last 1 s of 6.
        assert_eq!(st.mean_reorder_bytes(s(6)), 240.0 / 6.0);
        assert_eq!(st.mean_reorder_bytes(Time::ZERO), 0.0);
    }

    #[test]
    fn upstream_subflows_ack_every_second_segment_whatever_the_connection_holds() {
        let mut r = receiver(Stack::Upstream);
        let sent = above_a_connection_level_hole(&mut r);
        assert_eq!(sent.len(), 10);
        assert!(sent.iter().all(|a| a.data_ack == 40));
        assert_eq!(r.stats.held_acks, vec![0, 0]);
    }

    #[test]
    fn out_of_tree_subflows_hold_acks_while_the_connection_holds_more() {
        // __tcp_ack_snd_check with __mptcp_select_window: each segment queued above the hole
        // shrinks the connection's window, so no second-segment ACK goes at once; the
        // delayed-ACK timer (40 ms after the first unacknowledged segment, at 41 ms) sends
        // one ACK for all twenty.
        let mut r = receiver(Stack::OutOfTree);
        let sent = above_a_connection_level_hole(&mut r);
        assert!(sent.is_empty(), "{} ACKs", sent.len());
        // Every segment after the first found an ACK owed and held it back.
        assert_eq!(r.stats.held_acks, vec![19, 0]);
        assert_eq!(r.poll_timeout(), Some(Time(81_000_000)));
        r.handle_timeout(Time(81_000_000));
        let late = acks(&mut r, 0);
        assert_eq!(late.len(), 1);
        assert_eq!((late[0].ack, late[0].data_ack), (60, 40));
        // The hole fills on subflow 1: the read frees the buffer, and ACKs flow again.
        r.handle_data(Time(90_000_000), &data(1, 0, 40));
        assert_eq!(r.data_rcv_nxt(), 61);
        for d in 61..=64 {
            r.handle_data(Time(91_000_000 + d), &data(0, d - 1, d));
        }
        assert_eq!(acks(&mut r, 0).len(), 2);
    }

    #[test]
    fn out_of_tree_subflows_ack_every_second_segment_when_data_arrives_in_order() {
        let mut r = receiver(Stack::OutOfTree);
        for d in 0..40 {
            r.handle_data(Time(d * 1_000_000), &data(0, d, d));
        }
        acks(&mut r, 0);
        for d in 40..60 {
            r.handle_data(Time(d * 1_000_000), &data(0, d, d));
        }
        assert_eq!(acks(&mut r, 0).len(), 10);
        assert_eq!(r.stats.held_acks, vec![0, 0]);
    }
}

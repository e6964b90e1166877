//! The window a Linux receiver advertises, and how its receive buffer grows (Linux 6.18).
//!
//! Buffer memory is not payload: the kernel charges each received packet's `skb->truesize`
//! to the buffer and advertises `win_from_space(rcvbuf - rmem) = (rcvbuf - rmem) x ratio / 256`
//! (`tcp_win_from_space`, `mptcp_space`), where `scaling_ratio` is payload / truesize of the
//! received packets (`tcp_measure_rcv_mss`). A 1,500-byte packet received on a TUN or veth
//! device occupies a 2,048-byte slab plus the `sk_buff`: 2,304 bytes. So with MPTCP's 1,424
//! bytes of payload the ratio is 158/256 and a 6 MiB buffer advertises at most 3.88 MB, which
//! `mpsched emulate --trace-headers` measures on this machine's kernel.
//!
//! - Window (`__tcp_select_window`): `full = win(rcvbuf)`, `free = full - held`; a zero
//!   window when `free < full / 2` and (`free < full / 16` or `free < mss`); otherwise
//!   `min(free, rcv_ssthresh)`. The right edge never moves left (the caller keeps it).
//! - `rcv_ssthresh` (`tcp_grow_window`): starts near 64 KB (`tcp_init_buffer_space`) and grows
//!   by `max(2 x advmss, 2 x len)` per received segment, up to `full`: the advertised window
//!   opens faster than slow start. MPTCP keeps one per subflow; the shared right edge is the
//!   largest any subflow advertised (`mptcp_set_rwin`).
//! - Autotuning (DRS, `tcp_moderate_rcvbuf`): the buffer starts at `tcp_rmem[1]`; at most once
//!   per receiver RTT, if the application read more than last time (`c > s`), the window target
//!   is `w = 2c + 4c(c - s)/s` (plus the span of the out-of-order queue) and the buffer becomes
//!   `space_from_win(w)`, capped at `tcp_rmem[2]` and never smaller (`tcp_rcvbuf_grow`, 6.18;
//!   MPTCP: `mptcp_rcvbuf_grow` with the largest subflow RTT). Data queued out of order grows
//!   it too, to `2s` plus the queue's span (`tcp_data_queue_ofo`, `mptcp_data_queue_ofo`).
//! - Upstream MPTCP subflows are sockets with buffers of their own (`ssk->sk_rcvbuf`, its
//!   `window_clamp`): a subflow's `rcv_ssthresh` grows only up to what its own buffer allows
//!   (`tcp_grow_window`: `min(window_clamp, tcp_space(ssk))`), not the connection's. A subflow's
//!   buffer starts at `tcp_rmem[1]` and grows only when the connection's buffer grows on a read
//!   ("make subflows follow along" in `mptcp_rcv_space_adjust`: `tcp_rcvbuf_grow(ssk, copied)`
//!   for each subflow past `tcp_init_transfer`) or when the subflow queues data out of order.
//!   Once the connection's buffer is at `tcp_rmem[2]` its subflows stop following, so a
//!   subflow that joins late keeps 131,072 bytes and advertises at most ~80 KB of its own
//!   (measured on this machine's 6.18 with `ss -tmi`: the STMS lab at 512 KiB, the LTE
//!   subflow's `rb131072 rcv_ssthresh:80106` for the whole run, Wi-Fi's grown 131,072 ->
//!   193,808 -> 499,196 at the connection's first reads). Only the shared right edge, which
//!   never moves left, lets such a subflow's ACKs carry the larger window.
//! - Receiver RTT (`tcp_rcv_rtt_measure_ts`): a full-sized segment echoing a new TSecr gives
//!   `now - TSecr`; a smaller sample replaces the estimate, a larger one enters a 1/8 EWMA
//!   (6.16+).
//! - MPTCP counts only connection-level data against the buffer (out-of-order data of a
//!   subflow is charged to that subflow's socket, `mptcp_space` ignores it); plain TCP counts
//!   its out-of-order queue.
//!
//! Left out: for plain TCP, the 6.16+ growth of the buffer by the span of its out-of-order
//! queue; the rounding of the window to the window-scale unit; memory pressure.

use crate::time::{Dur, Time};
use crate::units::wire;

/// `TCP_DEFAULT_SCALING_RATIO` (6.10+): the ratio before the first full-sized segment.
pub const DEFAULT_RATIO: u32 = 128;
/// truesize of a 1,500-byte packet received on a TUN or veth device (x86-64): a 2,048-byte
/// kmalloc slab for the data and `skb_shared_info`, plus the 256-byte `sk_buff`.
pub const TRUESIZE: u32 = 2304;
/// `tcp_rmem[1]`: the buffer autotuning starts from.
pub const RCVBUF_INITIAL: u64 = 131_072;
/// `TCP_INIT_CWND`: the first `rcvq_space.space` is at most 10 segments.
const INIT_SPACE_SEGMENTS: u64 = 10;
/// `TCP_MSS_DEFAULT`: a socket's `rcv_mss` before its first segment.
const TCP_MSS_DEFAULT: u32 = 536;
/// `tcp_grow_window` grows only on segments of at least 128 bytes.
const GROW_MIN_LEN: u32 = 128;

/// Linux's `scaling_ratio` for full segments of `mss` payload bytes: payload x 256 / truesize.
pub const fn linux_ratio(mss: u32) -> u32 {
    mss * 256 / TRUESIZE
}

#[derive(Clone, Debug)]
pub struct RcvWindowConfig {
    /// `tcp_rmem[2]`: the largest the buffer gets (bytes of memory).
    pub rcvbuf_max: u64,
    /// `tcp_rmem[1]`: the buffer at the start when autotuning.
    pub rcvbuf_initial: u64,
    /// `tcp_moderate_rcvbuf`: grow the buffer from `rcvbuf_initial`; otherwise it is
    /// `rcvbuf_max` from the start (as after `SO_RCVBUF`).
    pub autotune: bool,
    /// Payload bytes advertised per 256 bytes of buffer (Linux `scaling_ratio`), 1..=256.
    pub ratio: u32,
    /// Payload of a full segment.
    pub mss: u32,
    /// MPTCP: only connection-level data counts against the buffer.
    pub mptcp: bool,
    /// The out-of-tree MPTCP on Linux 4.x: one `rcv_ssthresh` for the connection, grown only
    /// while below the free space (`tcp_grow_window` on the meta socket), and Linux 4.x
    /// autotuning (`linux4_grow`) and receiver RTT (a 1/8 EWMA of every sample).
    pub out_of_tree: bool,
    pub subflows: usize,
}

/// An upstream MPTCP subflow socket's own receive buffer.
#[derive(Clone, Copy, Debug)]
struct SubflowBuf {
    /// `ssk->sk_rcvbuf` (its `window_clamp` is `win(ratio, rcvbuf)`).
    rcvbuf: u64,
    /// `rcvq_space.space`; 0 until the socket is established (`tcp_init_transfer`), and a
    /// subflow that is not established does not follow the connection's buffer.
    space: u64,
}

#[derive(Clone, Copy, Debug, Default)]
struct RcvRtt {
    /// Smoothed receiver RTT (0 = no sample yet).
    rtt: Dur,
    last_tsecr: Time,
}

pub struct RcvWindow {
    cfg: RcvWindowConfig,
    /// `sk_rcvbuf` now (bytes of memory).
    rcvbuf: u64,
    /// `rcv_ssthresh` per subflow.
    ssthresh: Vec<u64>,
    /// Upstream MPTCP: each subflow's own buffer.
    sf_buf: Vec<SubflowBuf>,
    rtt: Vec<RcvRtt>,
    /// Each subflow socket's `scaling_ratio` (`DEFAULT_RATIO` until `tcp_measure_rcv_mss`
    /// sees a segment longer than `rcv_mss`) and its `icsk_ack.rcv_mss`.
    sf_ratio: Vec<u32>,
    rcv_mss: Vec<u32>,
    /// Upstream MPTCP: the subflows in the connection's list (the client opened them; a
    /// subflow whose handshake is under way is there too), and the connection's own
    /// `scaling_ratio`, the least of theirs as of the last measurement.
    listed: Vec<bool>,
    conn_ratio: u32,
    // `rcvq_space`: bytes read in the current measurement, the previous measurement's bytes,
    // when it started and the RTT it was gated on.
    copied: u64,
    space: u64,
    measure_start: Time,
    measure_rtt: Dur,
}

impl RcvWindow {
    pub fn new(cfg: RcvWindowConfig) -> RcvWindow {
        let rcvbuf = if cfg.autotune {
            cfg.rcvbuf_initial.min(cfg.rcvbuf_max)
        } else {
            cfg.rcvbuf_max
        };
        let mut w = RcvWindow {
            rcvbuf,
            ssthresh: vec![0; cfg.subflows],
            // A subflow takes SO_RCVBUF from the connection (mptcp_sockopt_sync); autotuned,
            // it starts at tcp_rmem[1] as any TCP socket.
            sf_buf: vec![SubflowBuf { rcvbuf, space: 0 }; cfg.subflows],
            rtt: vec![RcvRtt::default(); cfg.subflows],
            sf_ratio: vec![DEFAULT_RATIO; cfg.subflows],
            rcv_mss: vec![TCP_MSS_DEFAULT; cfg.subflows],
            listed: vec![false; cfg.subflows],
            conn_ratio: DEFAULT_RATIO,
            copied: 0,
            space: 0,
            measure_start: Time::ZERO,
            measure_rtt: Dur::ZERO,
            cfg,
        };
        // `tcp_init_buffer_space`: the window clamp keeps one segment in reserve, and the
        // first measurement expects at most the initial window.
        let first = w.first_ssthresh(w.rcvbuf);
        w.ssthresh.iter_mut().for_each(|s| *s = first);
        w.space = first.min(INIT_SPACE_SEGMENTS * wire::MSS as u64);
        w
    }

    /// The `rcv_ssthresh` of a new socket whose buffer is `rcvbuf`: the handshake's window,
    /// the clamp keeping one segment in reserve.
    fn first_ssthresh(&self, rcvbuf: u64) -> u64 {
        let advmss = wire::MSS as u64;
        let clamp = win(DEFAULT_RATIO, rcvbuf)
            .saturating_sub(advmss)
            .max(2 * advmss);
        handshake_rcv_wnd(rcvbuf).min(clamp)
    }

    /// Subflow `sf` is a new socket (it joined again after its address came back): its own
    /// threshold, buffer and RTT estimate start over; the connection's buffer is as it is.
    pub fn reset_subflow(&mut self, sf: usize) {
        self.sf_buf[sf] = SubflowBuf {
            rcvbuf: self.initial_subflow_rcvbuf(),
            space: 0,
        };
        if !self.cfg.out_of_tree {
            // Upstream, the new socket's window comes from its own buffer.
            let rcvbuf = if self.subflow_buffers() {
                self.sf_buf[sf].rcvbuf
            } else {
                self.rcvbuf
            };
            self.ssthresh[sf] = self.first_ssthresh(rcvbuf);
        }
        self.rtt[sf] = RcvRtt::default();
        self.sf_ratio[sf] = DEFAULT_RATIO;
        self.rcv_mss[sf] = TCP_MSS_DEFAULT;
    }

    /// Subflow `sf` is in the connection's list from now on (the client sent its SYN), or
    /// no longer (`listed` false: closed).
    pub fn list(&mut self, sf: usize, listed: bool) {
        if let Some(l) = self.listed.get_mut(sf) {
            *l = listed;
        }
    }

    /// The `scaling_ratio` the connection's buffer and window use: upstream MPTCP's own
    /// (`msk->scaling_ratio`, `mptcp_win_from_space`), plain TCP's socket's, Linux 4.x's
    /// fixed `tcp_adv_win_scale`.
    fn ratio(&self) -> u32 {
        if self.cfg.out_of_tree {
            self.cfg.ratio
        } else if self.cfg.mptcp {
            self.conn_ratio
        } else {
            self.sf_ratio[0]
        }
    }

    /// Subflow `sf`'s own `scaling_ratio` (its window clamp and buffer).
    fn sf_ratio(&self, sf: usize) -> u32 {
        if self.cfg.out_of_tree {
            self.cfg.ratio
        } else {
            self.sf_ratio[sf]
        }
    }

    fn initial_subflow_rcvbuf(&self) -> u64 {
        if self.cfg.autotune {
            self.cfg.rcvbuf_initial.min(self.cfg.rcvbuf_max)
        } else {
            self.cfg.rcvbuf_max
        }
    }

    /// Whether each subflow has a buffer of its own that caps its `rcv_ssthresh`.
    fn subflow_buffers(&self) -> bool {
        self.cfg.mptcp && !self.cfg.out_of_tree
    }

    /// Subflow `sf` is established (`tcp_init_transfer` -> `tcp_init_buffer_space`): its first
    /// `rcvq_space.space` is at most 10 segments, and from now on it follows the connection's
    /// buffer.
    pub fn establish(&mut self, sf: usize) {
        if let Some(b) = self.sf_buf.get_mut(sf).filter(|b| b.space == 0) {
            b.space = self.ssthresh[sf].min(INIT_SPACE_SEGMENTS * wire::MSS as u64);
            self.listed[sf] = true;
        }
    }

    /// `tcp_rcvbuf_grow(ssk, newval)` (6.18) on subflow `sf`, whose out-of-order queue spans
    /// `ooo_span` bytes: twice `newval`, plus twice the growth since the last value, plus the
    /// span; the buffer never shrinks.
    fn grow_subflow(&mut self, sf: usize, newval: u64, ooo_span: u64) {
        let old = self.sf_buf[sf].space.max(1);
        self.sf_buf[sf].space = newval;
        if !self.cfg.autotune {
            return;
        }
        let rcvwin = 2 * newval;
        let grow = rcvwin * newval.saturating_sub(old) / old;
        let rcvbuf = self.buffer_for(self.sf_ratio(sf), rcvwin + 2 * grow + ooo_span);
        let b = &mut self.sf_buf[sf];
        b.rcvbuf = b.rcvbuf.max(rcvbuf);
    }

    /// Subflow `sf` queued a segment out of order; its queue spans `ooo_span` bytes from its
    /// `rcv_nxt` (`tcp_data_queue_ofo` -> `tcp_rcvbuf_grow(sk, rcvq_space.space)`).
    pub fn on_subflow_ooo(&mut self, sf: usize, ooo_span: u64) {
        if self.subflow_buffers() && self.sf_buf.get(sf).is_some_and(|b| b.space > 0) {
            self.grow_subflow(sf, self.sf_buf[sf].space, ooo_span);
        }
    }

    /// The connection queued a segment out of order; its queue spans `ooo_span` bytes from
    /// the Data ACK (`mptcp_data_queue_ofo` -> `mptcp_rcvbuf_grow(sk, rcvq_space.space)`).
    /// The subflows do not follow this growth.
    pub fn on_connection_ooo(&mut self, ooo_span: u64) {
        // Called for every segment queued out of order: nothing to do once at tcp_rmem[2].
        if self.subflow_buffers() && self.cfg.autotune && self.rcvbuf < self.cfg.rcvbuf_max {
            self.rcvbuf = self
                .rcvbuf
                .max(self.buffer_for(self.ratio(), 2 * self.space + ooo_span));
        }
    }

    /// The buffer for a window target of `w` bytes at `ratio` (`tcp_space_from_win`), up to
    /// `tcp_rmem[2]`.
    fn buffer_for(&self, ratio: u32, w: u64) -> u64 {
        space_from_win(ratio, w).min(self.cfg.rcvbuf_max)
    }

    /// The window the peer may use before the first ACK: the SYN's, whose 16-bit field is not
    /// scaled (RFC 7323 2.2).
    pub fn initial_window(&self) -> u64 {
        handshake_rcv_wnd(self.rcvbuf).min(65_535)
    }

    /// `sk_rcvbuf` now.
    pub fn rcvbuf(&self) -> u64 {
        self.rcvbuf
    }

    /// Subflow `sf`'s receiver RTT estimate (`rcv_rtt_est`; zero before its first sample).
    pub fn rcv_rtt(&self, sf: usize) -> Dur {
        self.rtt.get(sf).map_or(Dur::ZERO, |r| r.rtt)
    }

    /// `tcp_full_space`: the largest window the buffer allows now.
    pub fn full_space(&self) -> u64 {
        win(self.ratio(), self.rcvbuf)
    }

    /// Whether out-of-order data of the subflows counts against the buffer (plain TCP).
    pub fn counts_subflow_queues(&self) -> bool {
        !self.cfg.mptcp
    }

    /// Which `rcv_ssthresh` subflow `sf` uses.
    fn ss(&self, sf: usize) -> usize {
        if self.cfg.out_of_tree {
            0
        } else {
            sf
        }
    }

    /// A data segment of `len` bytes arrived on subflow `sf`, not a duplicate, echoing
    /// `tsecr`; `held` bytes count against the connection's buffer, `sf_held` against the
    /// subflow's own (its out-of-order queue). Returns whether `rcv_ssthresh` grew.
    pub fn on_segment(
        &mut self,
        now: Time,
        sf: usize,
        len: u32,
        tsecr: Time,
        held: u64,
        sf_held: u64,
    ) -> bool {
        let Some(r) = self.rtt.get_mut(sf) else {
            return false;
        };
        // tcp_rcv_rtt_measure_ts: one sample per new TSecr, from full-sized segments.
        if tsecr > Time::ZERO && tsecr != r.last_tsecr && tsecr <= now {
            r.last_tsecr = tsecr;
            if len >= self.cfg.mss {
                let sample = now - tsecr;
                r.rtt = if r.rtt == Dur::ZERO || (sample < r.rtt && !self.cfg.out_of_tree) {
                    sample
                } else {
                    Dur(r.rtt.0 - r.rtt.0 / 8 + sample.0 / 8)
                };
            }
        }
        // tcp_measure_rcv_mss: a segment longer than rcv_mss (536 at first) sets the socket's
        // ratio from its payload / truesize (one of equal length changes nothing).
        if len > self.rcv_mss[sf] {
            let len = len.min(self.cfg.mss);
            self.sf_ratio[sf] = (self.cfg.ratio * len / self.cfg.mss).max(1);
            self.rcv_mss[sf] = len;
        }
        // tcp_grow_window.
        if len < GROW_MIN_LEN {
            return false;
        }
        let limit = if self.subflow_buffers() {
            // min(window_clamp, tcp_space(ssk)) of the subflow's own socket.
            self.establish(sf);
            win(self.sf_ratio(sf), self.sf_buf[sf].rcvbuf).saturating_sub(sf_held)
        } else {
            self.full_space().saturating_sub(held)
        };
        let ss = self.ss(sf);
        let room = limit.saturating_sub(self.ssthresh[ss]);
        let incr = (2 * wire::MSS as u64).max(2 * len as u64);
        self.ssthresh[ss] += room.min(incr);
        room > 0
    }

    /// The application read `bytes` while the connection's out-of-order queue spans
    /// `ooo_span` bytes: at most once per receiver RTT, grow the buffer with what it reads
    /// (`tcp_rcv_space_adjust` / `mptcp_rcv_space_adjust`). Returns what was read in the
    /// measurement if the buffer grew: upstream MPTCP's subflows then follow
    /// ([`RcvWindow::follow`]).
    pub fn on_read(&mut self, now: Time, bytes: u64, ooo_span: u64) -> Option<u64> {
        // The measurement runs with autotuning off too (a fixed SO_RCVBUF): only the growth
        // is skipped (tcp_rcvbuf_grow returns), and upstream MPTCP still takes its ratio.
        if bytes == 0 {
            return None;
        }
        self.copied += bytes;
        let elapsed = now.saturating_since(self.measure_start);
        if self.measure_rtt > Dur::ZERO && elapsed < self.measure_rtt {
            return None;
        }
        let rtt = self.rtt.iter().map(|r| r.rtt).max().unwrap_or(Dur::ZERO);
        self.measure_rtt = rtt;
        if self.subflow_buffers() {
            // mptcp_rcv_space_adjust: the least ratio of the subflows in the list, one whose
            // handshake is under way (no data yet) at TCP_DEFAULT_SCALING_RATIO.
            let listed = (0..self.listed.len()).filter(|&i| self.listed[i]);
            if let Some(r) = listed.map(|i| self.sf_ratio[i]).min() {
                self.conn_ratio = r;
            }
        }
        if rtt == Dur::ZERO || elapsed < rtt {
            return None;
        }
        let (c, s) = (self.copied, self.space.max(1));
        let mut grew = None;
        if c > s && !self.cfg.autotune {
            self.space = c;
        } else if c > s {
            let w = if self.cfg.out_of_tree {
                linux4_grow(c, s)
            } else {
                // tcp_rcvbuf_grow (6.18): twice what was read, plus the growth seen; MPTCP's
                // also the span of the connection's out-of-order queue.
                let span = if self.subflow_buffers() { ooo_span } else { 0 };
                let rcvwin = 2 * c;
                rcvwin + 2 * (rcvwin * (c - s) / s) + span
            };
            let rcvbuf = self.buffer_for(self.ratio(), w);
            if rcvbuf > self.rcvbuf {
                self.rcvbuf = rcvbuf;
                grew = Some(c);
            }
            self.space = c;
        }
        self.copied = 0;
        self.measure_start = now;
        grew.filter(|_| self.subflow_buffers())
    }

    /// The connection's buffer grew on a read of `copied` bytes: established subflow `sf`,
    /// whose out-of-order queue spans `ooo_span` bytes, follows along
    /// (`mptcp_rcv_space_adjust` -> `tcp_rcvbuf_grow(ssk, copied)`).
    pub fn follow(&mut self, sf: usize, copied: u64, ooo_span: u64) {
        if self.sf_buf.get(sf).is_some_and(|b| b.space > 0) {
            self.grow_subflow(sf, copied, ooo_span);
        }
    }

    /// Subflow `sf`'s own buffer (`ssk->sk_rcvbuf`), upstream MPTCP.
    pub fn subflow_rcvbuf(&self, sf: usize) -> Option<u64> {
        self.subflow_buffers()
            .then(|| self.sf_buf.get(sf).map(|b| b.rcvbuf))
            .flatten()
    }

    /// The window subflow `sf` advertises with `held` bytes counting against the buffer
    /// (`__tcp_select_window`), before the never-shrink rule.
    pub fn window(&self, sf: usize, held: u64) -> u64 {
        let full = self.full_space();
        let free = full.saturating_sub(held);
        if free < full / 2 && (free < full / 16 || free < self.cfg.mss as u64) {
            return 0;
        }
        free.min(self.ssthresh.get(self.ss(sf)).copied().unwrap_or(0))
    }
}

/// Linux 4.x `tcp_rcv_space_adjust`: twice what was read plus 16 segments, times 1.5 if the
/// reading grew by a quarter, times 2 if by half.
fn linux4_grow(c: u64, s: u64) -> u64 {
    let w = 2 * c + 16 * wire::MSS as u64;
    if 4 * c >= 5 * s {
        if 2 * c >= 3 * s {
            2 * w
        } else {
            w + w / 2
        }
    } else {
        w
    }
}

/// `rcv_wnd` of the handshake of a socket whose buffer is `rcvbuf` (`tcp_select_initial_window`,
/// 6.10+): the default ratio applied to the buffer, in whole segments.
fn handshake_rcv_wnd(rcvbuf: u64) -> u64 {
    let advmss = wire::MSS as u64;
    let space = win(DEFAULT_RATIO, rcvbuf);
    if space > advmss {
        space / advmss * advmss
    } else {
        space
    }
}

/// `__tcp_win_from_space`.
fn win(ratio: u32, space: u64) -> u64 {
    (space * ratio as u64) >> 8
}

/// `__tcp_space_from_win`.
fn space_from_win(ratio: u32, w: u64) -> u64 {
    (w << 8) / ratio.max(1) as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    const MSS: u32 = wire::MPTCP_MSS;

    fn cfg(max: u64, autotune: bool) -> RcvWindowConfig {
        RcvWindowConfig {
            rcvbuf_max: max,
            rcvbuf_initial: RCVBUF_INITIAL,
            autotune,
            ratio: linux_ratio(MSS),
            mss: MSS,
            mptcp: true,
            out_of_tree: false,
            subflows: 2,
        }
    }

    fn ms(t: u64) -> Time {
        Time(t * 1_000_000)
    }

    #[test]
    fn the_ratio_and_the_windows_this_machine_s_kernel_advertises() {
        // Measured with `mpsched emulate --trace-headers` (MPTCP, TUN devices, Linux 6.18):
        // the largest windows of a 6 MiB and a 512 KiB buffer.
        assert_eq!(linux_ratio(MSS), 158);
        assert_eq!(linux_ratio(wire::MSS), 160);
        // Once every subflow has data (before, the connection's ratio is the default 128).
        let full = |rcvbuf| {
            let mut w = RcvWindow::new(cfg(rcvbuf, false));
            for sf in 0..2 {
                w.list(sf, true);
                w.on_segment(ms(1), sf, MSS, Time::ZERO, 0, 0);
            }
            assert_eq!(w.full_space(), win(128, rcvbuf));
            w.on_read(ms(2), 1, 0);
            w.full_space()
        };
        assert_eq!(full(6 << 20), 3_883_008);
        assert_eq!(full(512 << 10), 323_584);
    }

    #[test]
    fn the_handshake_window_and_the_first_rcv_ssthresh() {
        // The SYN's 65,160 (45 x 1,448); rcv_ssthresh 64,088 = 65,536 - 1,448, as TCP_INFO
        // reports on this kernel.
        let w = RcvWindow::new(cfg(6 << 20, true));
        assert_eq!(w.initial_window(), 65_160);
        assert_eq!(w.window(0, 0), 64_088);
        assert_eq!(w.rcvbuf(), RCVBUF_INITIAL);
    }

    #[test]
    fn the_window_opens_by_two_segments_per_segment_up_to_the_buffer() {
        let mut w = RcvWindow::new(cfg(6 << 20, false));
        let before = w.ssthresh[0];
        w.on_segment(ms(1), 0, MSS, Time::ZERO, 0, 0);
        assert_eq!(w.ssthresh[0], before + 2 * 1448);
        // The other subflow's threshold did not move.
        assert_eq!(w.ssthresh[1], before);
        for _ in 0..10_000 {
            w.on_segment(ms(1), 0, MSS, Time::ZERO, 0, 0);
        }
        assert_eq!(w.window(0, 0), w.full_space());
    }

    #[test]
    fn held_data_closes_the_window_and_little_room_closes_it_entirely() {
        let mut w = RcvWindow::new(cfg(1 << 20, false));
        for _ in 0..1000 {
            w.on_segment(ms(1), 0, MSS, Time::ZERO, 0, 0);
        }
        let full = w.full_space();
        assert_eq!(w.window(0, 100_000), full - 100_000);
        // Below half of the buffer free and less than a sixteenth: zero.
        assert_eq!(w.window(0, full - full / 16 + 1), 0);
        // Less than half free but more than a sixteenth: still open.
        assert_eq!(w.window(0, full / 2 + 1), full - full / 2 - 1);
    }

    #[test]
    fn autotuning_grows_the_buffer_once_per_receiver_rtt() {
        let mut w = RcvWindow::new(cfg(6 << 20, true));
        // Receiver RTT 100 ms from the echoed timestamp.
        w.on_segment(ms(100), 0, MSS, ms(1), 0, 0);
        assert_eq!(w.rtt[0].rtt, Dur::from_millis(99));
        // Nothing before a first RTT has passed.
        w.on_read(ms(50), 100_000, 0);
        assert_eq!(w.rcvbuf(), RCVBUF_INITIAL);
        // 200,000 bytes read in the first RTT against space 14,480: w = 2c + 4c(c-s)/s.
        w.on_read(ms(150), 100_000, 0);
        let (c, s) = (200_000u64, 14_480u64);
        let target = 2 * c + 4 * c * (c - s) / s;
        assert_eq!(w.rcvbuf(), ((target << 8) / 158).min(6 << 20));
        // Capped at tcp_rmem[2], and never shrinks.
        w.on_read(ms(300), 5_000_000, 0);
        assert_eq!(w.rcvbuf(), 6 << 20);
        w.on_read(ms(500), 10, 0);
        assert_eq!(w.rcvbuf(), 6 << 20);
    }

    #[test]
    fn subflows_follow_the_connection_s_buffer_as_the_kernel_s_did() {
        // `ss -tmi` at the client (Linux 6.18, the STMS lab at 512 KiB): the Wi-Fi subflow's
        // rcv_space went 14,480 -> 19,936 -> 29,904 -> 56,048 at the connection's first
        // reads, and its buffer 131,072 -> 131,072 -> 193,808 -> 499,196.
        let mut w = RcvWindow::new(cfg(512 << 10, true));
        w.establish(0);
        assert_eq!(w.sf_buf[0].space, 14_480);
        // Its first full-sized segment set its ratio (tcp_measure_rcv_mss).
        w.on_segment(ms(1), 0, MSS, Time::ZERO, 0, 0);
        let mut bufs = vec![];
        for copied in [19_936, 29_904, 56_048] {
            w.follow(0, copied, 0);
            bufs.push(w.subflow_rcvbuf(0).unwrap());
        }
        for (model, kernel) in bufs.iter().zip([131_072u64, 193_808, 499_196]) {
            assert!(model.abs_diff(kernel) * 10_000 <= kernel, "{bufs:?}");
        }
        // Subflow 1 is not established yet: it does not follow.
        assert_eq!(w.subflow_rcvbuf(1), Some(RCVBUF_INITIAL));
    }

    #[test]
    fn the_connection_s_ratio_is_its_subflows_least_as_the_kernel_s_was() {
        // `ss -Mmi` and `ss -tmi` every ~10 ms at the client (Linux 6.18, the STMS lab with a
        // 6 MiB tcp_rmem[2], LTE at 100 ms): the connection's buffer went 131,072 -> 334,164
        // -> 594,260 while Wi-Fi followed 131,072 -> 337,757 -> 481,425 (its rcv_space
        // 14,480 -> 31,328 -> 56,704). Wi-Fi's are tcp_rcvbuf_grow at its own ratio, 158;
        // the connection's are the same growth at 128: the LTE subflow, in the list since its
        // MP_JOIN but without data, still has TCP_DEFAULT_SCALING_RATIO, and
        // mptcp_rcv_space_adjust takes the least. (The connection's space before its first
        // growth was 17,088: an earlier measurement that read more than 14,480 but did not
        // grow the buffer.)
        let mut w = RcvWindow::new(cfg(6 << 20, true));
        w.list(0, true);
        w.list(1, true);
        w.establish(0);
        w.on_segment(ms(40), 0, MSS, ms(20), 0, 0);
        assert_eq!(w.on_read(ms(40), 1, 0), None);
        assert_eq!(w.on_read(ms(61), 17_088, 0), None);
        assert_eq!((w.ratio(), w.rcvbuf(), w.space), (128, 131_072, 17_088));
        let mut steps = vec![];
        for (t, copied) in [(82, 31_328), (103, 56_704)] {
            let c = w.on_read(ms(t), copied, 0).expect("grew");
            w.follow(0, c, 0);
            w.follow(1, c, 0);
            steps.push((w.rcvbuf(), w.subflow_rcvbuf(0).unwrap()));
        }
        assert_eq!(steps, [(334_164, 337_757), (594_260, 481_425)]);
        // LTE not established yet: it did not follow.
        assert_eq!(w.subflow_rcvbuf(1), Some(RCVBUF_INITIAL));
        // Its first segment gives it the measured ratio, and the connection takes it at its
        // next measurement: the window the buffer allows grows by 158 / 128.
        let before = w.full_space();
        w.on_segment(ms(210), 1, MSS, ms(110), 0, 0);
        assert_eq!(w.full_space(), before);
        w.on_read(ms(400), 1, 0);
        assert_eq!(w.ratio(), 158);
        assert_eq!(w.full_space(), win(158, w.rcvbuf()));
    }

    #[test]
    fn a_subflow_established_after_the_buffer_stopped_growing_keeps_its_first_buffer() {
        let mut w = RcvWindow::new(cfg(512 << 10, true));
        w.establish(0);
        // The connection reads a lot in its first RTT: its buffer goes to tcp_rmem[2].
        w.on_segment(ms(20), 0, MSS, ms(1), 0, 0);
        assert_eq!(w.on_read(ms(30), 300_000, 0), Some(300_000));
        assert_eq!(w.rcvbuf(), 512 << 10);
        // The second subflow joins now; from here on the connection's buffer cannot grow,
        // so its own stays at 131,072 and caps its rcv_ssthresh at win(131,072) = 80,896,
        // as the kernel's LTE subflow (`rb131072 rcv_ssthresh:80106`, 80,896 with nothing
        // queued) for a whole run.
        w.establish(1);
        for t in 0..10_000 {
            w.on_segment(ms(40 + t), 1, MSS, Time::ZERO, 0, 0);
        }
        assert_eq!(w.on_read(ms(20_000), 10_000_000, 0), None);
        assert_eq!(w.subflow_rcvbuf(1), Some(RCVBUF_INITIAL));
        assert_eq!(w.window(1, 0), 80_896);
        assert_eq!(w.window(0, 0), w.full_space().min(w.ssthresh[0]));
        // What a new subflow holds out of order counts against its own buffer: with 70,000
        // bytes queued, its threshold does not grow from the handshake's 64,088.
        w.reset_subflow(1);
        w.establish(1);
        for t in 0..100 {
            w.on_segment(ms(30_000 + t), 1, MSS, Time::ZERO, 0, 70_000);
        }
        assert_eq!(w.ssthresh[1], 64_088);
    }

    #[test]
    fn data_queued_out_of_order_grows_the_buffer_by_the_queue_s_span() {
        // tcp_data_queue_ofo -> tcp_rcvbuf_grow(sk, space): 2 x space + the span.
        let mut w = RcvWindow::new(cfg(512 << 10, true));
        w.establish(1);
        w.on_segment(ms(1), 1, MSS, Time::ZERO, 0, 0);
        w.on_subflow_ooo(1, 80_000);
        let want = ((2 * 14_480 + 80_000) << 8) / 158;
        assert_eq!(w.subflow_rcvbuf(1), Some(want));
        // Never smaller.
        w.on_subflow_ooo(1, 1_000);
        assert_eq!(w.subflow_rcvbuf(1), Some(want));
        // The connection's own queue grows the connection's buffer (mptcp_data_queue_ofo)
        // and not the subflows'.
        w.on_connection_ooo(400_000);
        assert_eq!(w.rcvbuf(), 512 << 10);
        assert_eq!(w.subflow_rcvbuf(1), Some(want));
    }

    #[test]
    fn a_larger_rtt_sample_is_smoothed_a_smaller_one_taken() {
        let mut w = RcvWindow::new(cfg(6 << 20, true));
        w.on_segment(ms(100), 1, MSS, ms(20), 0, 0);
        w.on_segment(ms(200), 1, MSS, ms(20), 0, 0); // same TSecr: ignored
        assert_eq!(w.rtt[1].rtt, Dur::from_millis(80));
        w.on_segment(ms(260), 1, MSS, ms(100), 0, 0);
        assert_eq!(w.rtt[1].rtt, Dur::from_millis(80 - 10 + 20));
        w.on_segment(ms(300), 1, MSS, ms(250), 0, 0);
        assert_eq!(w.rtt[1].rtt, Dur::from_millis(50));
        // A short segment gives no sample.
        w.on_segment(ms(400), 1, 100, ms(390), 0, 0);
        assert_eq!(w.rtt[1].rtt, Dur::from_millis(50));
    }

    #[test]
    fn out_of_tree_one_threshold_for_the_connection_grown_only_below_the_free_space() {
        // 128 KiB to start with, half of it window (tcp_adv_win_scale = 1): 65,536 bytes;
        // rcv_ssthresh 64,088.
        let mut w = RcvWindow::new(RcvWindowConfig {
            out_of_tree: true,
            ratio: 128,
            ..cfg(6 << 20, true)
        });
        assert_eq!((w.full_space(), w.window(1, 0)), (65_536, 64_088));
        // A segment on subflow 0 opens the window of subflow 1 too, up to the free space.
        assert!(w.on_segment(ms(1), 0, MSS, Time::ZERO, 0, 0));
        assert_eq!(w.window(1, 0), 65_536);
        // Held data leaves less free space than the threshold: no growth, a smaller window.
        assert!(!w.on_segment(ms(1), 1, MSS, Time::ZERO, 10_000, 0));
        assert_eq!(w.window(0, 10_000), 55_536);
    }

    #[test]
    fn linux4_autotuning_doubles_on_fast_growth() {
        let seg = 16 * wire::MSS as u64;
        assert_eq!(linux4_grow(100_000, 100_000), 200_000 + seg);
        assert_eq!(linux4_grow(130_000, 100_000), (260_000 + seg) * 3 / 2);
        assert_eq!(linux4_grow(150_000, 100_000), 2 * (300_000 + seg));
    }
}

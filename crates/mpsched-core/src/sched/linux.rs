//! The upstream Linux MPTCP scheduler (kernel 6.x, `mptcp_subflow_get_send` and
//! `__mptcp_push_pending` in net/mptcp/protocol.c): data is handed out in bursts to the
//! subflow that will drain its queue soonest, into that subflow's own send queue.
//!
//! ```text
//! push pending data (whenever the connection may send):
//!     while there is unsent data inside the peer's receive window:
//!         for each established subflow s:
//!             nr_active += not backup[s]
//!             if avg_pace[s] == 0: avg_pace[s] <- pacing_rate[s]   (skip s if still 0)
//!             linger[s] <- wmem_queued[s] x 2^32 / avg_pace[s]
//!         chosen <- smallest linger among regular subflows (backups if nr_active == 0)
//!         if none, or wmem_queued[chosen] >= sndbuf[chosen]: stop   (sk_stream_memory_free)
//!         burst <- min(65,428 bytes, receive window right edge - next new byte)
//!         avg_pace[chosen] <- (avg_pace x wmem_queued + pacing_rate x burst) / (burst + wmem)
//!         append `burst` bytes to chosen's send queue, one data fragment (32 KiB) at a time,
//!             stopping at a fragment's end once wmem_queued[chosen] >= sndbuf[chosen]
//! each subflow sends from its own queue as its congestion window allows (tcp_push)
//! ```
//!
//! What makes this scheduler unlike the out-of-tree ones: the choice is made among all
//! established subflows, whether or not their window has room, and the data then waits in
//! that subflow's queue (`notsent` in `ss -ti`). `wmem_queued` counts what a subflow has sent
//! and not had ACKed plus what waits in its queue; a subflow whose queue is long lingers long.
//! And only the chosen subflow's buffer is checked: when the subflow that lingers least has no
//! buffer room, nothing is pushed anywhere, even if another has room (this is how, on this
//! machine's kernel, a 200 ms path can be left with its window unused while the 20 ms path's
//! queue holds half a megabyte).
//!
//! The model's reading:
//! - `wmem_queued` counts memory as the kernel's does, measured on it: 1,716 bytes per
//!   segment in flight (1,424 of payload), 1,510 per SACKed one (SACKed skbs are merged) and
//!   1.05 x the payload waiting in the queue; a subflow's buffer is its autotuned `sndbuf`
//!   (`SubflowView::sndbuf`). Where two subflows' lingers are close (a dead path's full queue
//!   against a recovering one's), these decide which is chosen: after a Wi-Fi outage, whether
//!   every written byte is pushed before the connection timer first fires
//!   (docs/calibration/README.md). Counting payload
//!   only, the model's Wi-Fi never filled its buffer and the pushes starved LTE less than the
//!   kernel's do (docs/experiments/outage.md).
//! - Pushing happens when the connection consults its scheduler, i.e. when some subflow has
//!   window room; the kernel also pushes when the application writes or a Data ACK opens the
//!   window while every window is full. Each push hands out bursts until the chosen subflow's
//!   buffer is full, as the kernel's loop does, so a subflow's queue holds what the kernel's
//!   holds (LTE's ~2 MB `notsent` through a Wi-Fi outage, docs/experiments/outage.md).
//! - A burst is whole segments: the kernel cuts the last one short at the burst's end.
//! - Reinjections: upstream retransmits at the MPTCP level (`mptcp_subflow_get_retrans`) only
//!   on an active subflow whose TCP queues are empty, regular before backup. The model's
//!   reinjection queue (the head fragment the connection timer resends) follows that rule: a
//!   queued segment goes out on an idle subflow with window space that has not carried it, or
//!   waits. At a stale mark or a closed subflow everything not Data-ACKed is pushed again from
//!   the Data ACK (`__mptcp_retransmit_pending_data`), appended to the subflows' queues behind
//!   what they hold: a segment already in a queue goes out twice, as in the kernel.
//! - `pacing_rate` is the subflow's `tcp_update_pacing_rate` value (the view's
//!   `pacing_rate_bps`).

use crate::sched::{Decision, Reason, SchedCtx, SchedInfo, Scheduler, SubflowSet, SubflowView};
use std::collections::VecDeque;

pub const INFO: SchedInfo = SchedInfo {
    name: "linux",
    description: "upstream Linux: the subflow with the smallest linger time (queued bytes / \
                  average pacing rate), bursts of up to 65,428 bytes, backup only if no \
                  regular subflow is active",
    source: "Linux 5.x/6.x net/mptcp/protocol.c, mptcp_subflow_get_send",
    params: &[],
    build: |_| Ok(Box::new(LinuxSched::new())),
};

/// `MPTCP_SEND_BURST_SIZE`: 64 KiB minus the TCP/IP header and option space (65,428 bytes).
pub const SEND_BURST_BYTES: u64 = 65_428;

#[derive(Debug, Default)]
pub struct LinuxSched {
    /// Per subflow `avg_pacing_rate` (bits per second; 0 = not yet set).
    avg_pacing: Vec<u64>,
    /// Per subflow: data segments pushed to its send queue and not yet sent, in order.
    queues: Vec<VecDeque<u64>>,
    /// Every data segment below this has been pushed to some subflow.
    next_new: u64,
    /// The subflow a data fragment is being retransmitted on, and the segments of it left:
    /// `__mptcp_retrans` sends a whole fragment on the idle subflow it picked.
    retrans_on: Option<(usize, u64)>,
    /// Everything not Data-ACKed is being pushed again (a subflow went stale or closed).
    rewinding: bool,
    /// The connection's rewind count when this one began.
    rewinds: u32,
}

/// What a segment in flight costs in `sk_wmem_queued`: measured on this kernel (`ss -tm` `w`
/// against `unacked`, scenarios/wifi-outage.toml, LTE with nothing queued): 1,716 bytes for
/// 1,424 of payload, steady from 530 to 600 segments in flight (about two segments per skb
/// after TSO autosizing, each skb ~580 bytes of metadata).
const INFLIGHT_TRUESIZE: u64 = 1716;
/// What a SACKed segment costs: SACKed skbs are merged (`tcp_shift_skb_data`), so less
/// metadata per segment. Measured on this kernel (scenarios/wifi-outage.toml with
/// `--kernel-trace`, `wmem_queued` = the scheduler's `ratio` x `pace` / 2^32 beside the
/// server's `TCP_INFO` samples, the others at `INFLIGHT_TRUESIZE` and `QUEUED_TRUESIZE_PCT`):
/// LTE in recovery with 241 of 620 SACKed, 1,490 bytes each; Wi-Fi with 111 of 254, 1,560.
const SACKED_TRUESIZE: u64 = 1510;
/// And what queued data costs, per 100 bytes of payload (the same runs, Wi-Fi: 1.04-1.06 of
/// its `notsent`; the queue's skbs are up to 64 KB).
const QUEUED_TRUESIZE_PCT: u64 = 105;

impl LinuxSched {
    pub fn new() -> LinuxSched {
        LinuxSched::default()
    }

    fn can_send(v: &SubflowView) -> bool {
        v.established && v.cwnd_space > 0
    }

    /// `sk_wmem_queued`: sent and not yet ACKed, plus waiting in the send queue, in the
    /// kernel's memory (skb truesize), not payload.
    fn wmem(&self, v: &SubflowView, mss: u32) -> u64 {
        let sacked = v.sacked_out.min(v.packets_out) as u64;
        (v.packets_out as u64 - sacked) * INFLIGHT_TRUESIZE
            + sacked * SACKED_TRUESIZE
            + self.queues[v.id].len() as u64 * mss as u64 * QUEUED_TRUESIZE_PCT / 100
    }

    /// `mptcp_subflow_get_send`: the subflow to push the next burst to, if it has buffer room.
    fn pick(&mut self, views: &[SubflowView], mss: u32) -> Option<usize> {
        let mut best: [Option<(u128, usize)>; 2] = [None, None];
        let mut nr_active = 0;
        for v in views.iter().filter(|v| v.established) {
            nr_active += u32::from(!v.backup);
            if self.avg_pacing[v.id] == 0 {
                self.avg_pacing[v.id] = v.pacing_rate_bps();
            }
            let pace = self.avg_pacing[v.id];
            if pace == 0 {
                continue;
            }
            let linger = ((self.wmem(v, mss) as u128) << 32) / pace as u128;
            let slot = &mut best[usize::from(v.backup)];
            if slot.is_none_or(|(l, _)| linger < l) {
                *slot = Some((linger, v.id));
            }
        }
        if nr_active == 0 {
            best[0] = best[1];
        }
        let (_, j) = best[0]?;
        (self.wmem(&views[j], mss) < views[j].sndbuf).then_some(j)
    }

    /// `mptcp_subflow_get_retrans`: an idle subflow (nothing queued), regular before backup.
    /// Upstream keeps no record of where a fragment went (no path mask): the subflow that
    /// carried it before may carry it again, and after a failure it is often the only one.
    fn pick_retrans(&self, views: &[SubflowView]) -> Option<usize> {
        let idle = |backup: bool| {
            views
                .iter()
                .find(|v| {
                    Self::can_send(v)
                        && v.backup == backup
                        && v.packets_out == 0
                        && self.queues[v.id].is_empty()
                })
                .map(|v| v.id)
        };
        idle(false).or_else(|| idle(true))
    }

    /// The head of the queue of a subflow with window room (`tcp_push`). What a subflow's
    /// queue holds goes out even if another copy went first or the Data ACK has passed it (a
    /// TCP write queue does not look at the connection); a copy after the first is a
    /// reinjection. On this machine's kernel, after a stale mark LTE sent the 1.4 MB it had
    /// delivered before the failure once more, behind the Data ACK (outage.md).
    fn sendable(&mut self, ctx: &SchedCtx) -> Option<Decision> {
        for v in ctx.subflows().iter().filter(|v| Self::can_send(v)) {
            let q = &mut self.queues[v.id];
            if let Some(&dseq) = q.front() {
                if dseq >= ctx.data_una() && !ctx.in_window(dseq) {
                    continue;
                }
                q.pop_front();
                let reason = if dseq >= ctx.data_una() && ctx.sent_on(dseq).is_empty() {
                    Reason::New
                } else {
                    Reason::Reinjection
                };
                return Some(Decision {
                    dseq,
                    subflows: SubflowSet::one(v.id),
                    reason,
                });
            }
        }
        None
    }

    /// Pushes one burst of new data to the chosen subflow's queue; false if nothing moved.
    fn push_burst(&mut self, ctx: &SchedCtx) -> bool {
        let first = self.next_new.max(ctx.data_una());
        if first >= ctx.written_end() || !ctx.in_window(first) {
            return false;
        }
        let mss = ctx.mss();
        let Some(j) = self.pick(ctx.subflows(), mss) else {
            return false;
        };
        let right_edge = ctx.data_una() * mss as u64 + ctx.window_bytes();
        let burst = SEND_BURST_BYTES.min(right_edge.saturating_sub(first * mss as u64));
        let wmem = self.wmem(&ctx.subflows()[j], mss);
        if burst > 0 {
            let avg = self.avg_pacing[j] as u128;
            let pace = ctx.subflows()[j].pacing_rate_bps() as u128;
            self.avg_pacing[j] =
                ((avg * wmem as u128 + pace * burst as u128) / (burst + wmem) as u128) as u64;
        }
        let mut pushed = 0;
        let mut dseq = first;
        let sndbuf = ctx.subflows()[j].sndbuf;
        let mss64 = mss as u64;
        let mut frag_end = ctx.frag_end(first * mss64);
        while burst > 0 && dseq < ctx.written_end() && ctx.in_window(dseq) {
            self.queues[j].push_back(dseq);
            pushed += ctx.seg_len(dseq) as u64;
            dseq += 1;
            // `__subflow_push_pending` hands out whole data fragments: only at a fragment's
            // end does it look at the burst and the subflow's buffer.
            if frag_end <= dseq * mss64 {
                if pushed >= burst || self.wmem(&ctx.subflows()[j], mss) >= sndbuf {
                    break;
                }
                frag_end = ctx.frag_end(dseq * mss64);
            }
        }
        self.next_new = dseq;
        dseq > first
    }
}

impl Scheduler for LinuxSched {
    fn name(&self) -> &'static str {
        INFO.name
    }

    fn pushed_end(&self) -> u64 {
        self.next_new
    }

    fn queued(&self, sf: usize) -> u32 {
        self.queues.get(sf).map_or(0, |q| q.len() as u32)
    }

    fn next(&mut self, ctx: &mut SchedCtx) -> Option<Decision> {
        let n = ctx.subflows().len();
        if self.avg_pacing.len() < n {
            self.avg_pacing.resize(n, 0);
            self.queues.resize_with(n, VecDeque::new);
        }
        if ctx.reinject_queue().next().is_none() {
            self.retrans_on = None;
        }
        // A subflow that may no longer send (stale) gives back what was pushed to it and not
        // sent: the connection pushes it again from there (`__mptcp_retransmit_pending_data`).
        for v in ctx.subflows().iter().filter(|v| !v.established) {
            if let Some(&first) = self.queues[v.id].iter().min() {
                self.queues[v.id].clear();
                self.next_new = self.next_new.min(first);
            }
        }
        // A stale or closed subflow: `__mptcp_retransmit_pending_data` moves the send head back
        // to the Data ACK, and every fragment is pushed again as pending data, behind what the
        // subflows' queues already hold (which they send first, and then again).
        if ctx.rewound() {
            // Each stale mark or close moves the send head back, one during a rewind too.
            if !self.rewinding || self.rewinds != ctx.rewinds() {
                self.rewinding = true;
                self.rewinds = ctx.rewinds();
                self.next_new = ctx.data_una();
            }
        } else {
            self.rewinding = false;
        }
        for dseq in ctx.reinject_queue().take_while(|_| !self.rewinding) {
            let views = ctx.subflows();
            let j = match self.retrans_on {
                // The rest of the fragment follows its head.
                Some((j, left)) if left > 0 && Self::can_send(&views[j]) => {
                    self.retrans_on = Some((j, left - 1));
                    Some(j)
                }
                _ => self.pick_retrans(views).inspect(|&j| {
                    let mss = u64::from(ctx.mss());
                    let frag_segs = ctx.frag_end(dseq * mss).div_ceil(mss) - dseq;
                    self.retrans_on = Some((j, frag_segs.saturating_sub(1)));
                }),
            };
            if let Some(j) = j {
                return Some(Decision {
                    dseq,
                    subflows: SubflowSet::one(j),
                    reason: Reason::Reinjection,
                });
            }
        }
        // `__mptcp_push_pending`: bursts go out while the chosen subflow's buffer has room,
        // not only what a window needs now; the rest waits in that subflow's queue.
        while self.push_burst(ctx) {}
        self.sendable(ctx)
    }
}

#[cfg(test)]
mod tests {
    use super::{LinuxSched, SEND_BURST_BYTES};
    use crate::cc::INFINITE_SSTHRESH;
    use crate::sched::testkit::*;
    use crate::sched::SubflowView;
    use crate::time::Dur;
    use std::collections::VecDeque;

    /// Segments of one burst: 65,428 bytes in segments of 1,424.
    const BURST: u64 = SEND_BURST_BYTES.div_ceil(MSS64);

    #[test]
    fn a_burst_goes_to_one_subflow_s_queue_and_waits_there_for_its_window() {
        assert_eq!(BURST, 46);
        let mut s = sender("linux", Setup::default());
        s.start(ms(0));
        let out = drain(&mut s);
        // Nothing queued anywhere (linger 0): the first subflow is handed a whole burst and
        // sends what its window of 10 allows; the second, still lingering 0, gets the next.
        assert_eq!(on(&out, 0), (0..10).collect::<Vec<_>>());
        assert_eq!(on(&out, 1), (BURST..BURST + 10).collect::<Vec<_>>());
        // An ACK opens room for 4 more on the first: they come from its own queue.
        s.handle_ack(ms(10), &ack(0, 2, 0, 1000));
        let out = drain(&mut s);
        assert_eq!(on(&out, 0), (10..14).collect::<Vec<_>>());
        assert!(on(&out, 1).is_empty());
    }

    #[test]
    fn a_push_that_starts_inside_a_fragment_stops_only_at_a_fragment_s_end() {
        // Upstream's fragments hold 32,728 bytes. A window of 30 segments (42,720 bytes) ends
        // inside the second: the first subflow is handed 0..30. When the window opens, the
        // idle second subflow is handed the next push from byte 42,720, and
        // `__subflow_push_pending` looks at the burst and the subflow's buffer only at a
        // fragment's end: its 46,080-byte buffer (2 x 10 x 2,304) is full after 31 queued
        // segments (1,495 bytes each), but the push runs on to the end of the fragment it is
        // in, 98,184 bytes, in segment 68.
        const FRAG: u64 = crate::conn::dfrag::DFRAG_BYTES;
        let mut s = sender(
            "linux",
            Setup {
                rtts_ms: vec![10, 10],
                rwnd_segments: 30,
                stack: crate::conn::Stack::Upstream,
                ..Setup::default()
            },
        );
        s.start(ms(0));
        assert_eq!(on(&drain(&mut s), 0), (0..10).collect::<Vec<_>>());
        assert_eq!(s.queued_segments(0), 20);
        assert_eq!(s.queued_segments(1), 0);
        assert_eq!(s.subflows()[1].sndbuf(), 46_080);
        // A window update only: nothing acknowledged, the right edge 1,000 segments on.
        s.handle_ack(ms(5), &ack(0, 0, 0, 1000));
        let out = drain(&mut s);
        assert_eq!(on(&out, 1), (30..40).collect::<Vec<_>>());
        let end = (3 * FRAG).div_ceil(MSS64);
        assert_eq!(end, 69);
        assert_eq!(u64::from(s.queued_segments(1)), end - 40);
    }

    #[test]
    fn nothing_is_pushed_when_the_subflow_that_lingers_least_has_no_buffer_room() {
        // 10 ms and 1 s subflows, 46,080-byte send buffers (2 x 10 x 2,304): each is handed a
        // burst of 46 segments (65,504 bytes) at the start, more than its buffer.
        let mut s = sender(
            "linux",
            Setup {
                rtts_ms: vec![10, 1000],
                ..Setup::default()
            },
        );
        s.start(ms(0));
        assert_eq!(drain(&mut s).len(), 20);
        // The slow subflow's ACKs drain its queue: 20, then the last 16, with room for 24
        // more left in its window.
        s.handle_ack(ms(1000), &ack(1, 10, 0, 1000));
        assert_eq!(
            on(&drain(&mut s), 1),
            (BURST + 10..BURST + 30).collect::<Vec<_>>()
        );
        s.handle_ack(ms(2000), &ack(1, 30, 0, 1000));
        let out = drain(&mut s);
        assert_eq!(on(&out, 1), (BURST + 30..2 * BURST).collect::<Vec<_>>());
        assert_eq!(s.subflows()[1].cwnd_space(), 24);
        // 22,784 bytes queued at 1 s lingers far longer than the fast subflow's 65,504 at
        // 10 ms: the fast one is chosen, its buffer is full, and the slow one gets nothing.
        assert_eq!(out.len(), 16);
    }

    #[test]
    fn a_burst_stops_at_a_data_fragment_s_end_once_the_subflow_s_buffer_is_full() {
        // `__subflow_push_pending` checks the buffer after each data fragment (32 KiB of the
        // stream), so a subflow's memory never passes its buffer by more than one fragment
        // (sent, at the in-flight cost); checked only per 64 KB burst it would by up to a
        // burst. The fast subflow's buffer (46,080 bytes) fills and drains as its ACKs come.
        let mut s = sender("linux", Setup::default());
        s.start(ms(0));
        drain(&mut s);
        // One fragment's segments, once sent, at the in-flight cost.
        let frag = crate::conn::dfrag::DFRAG_BYTES.div_ceil(MSS64) * super::INFLIGHT_TRUESIZE;
        let (mut worst, mut cum) = (0i64, 0);
        for t in 1..400 {
            cum += 2;
            s.handle_ack(
                ms(10 + t),
                &ack(0, cum.min(s.subflows()[0].snd_nxt()), 0, 1000),
            );
            drain(&mut s);
            for (i, sf) in s.subflows().iter().enumerate() {
                let wmem = u64::from(sf.packets_out()) * super::INFLIGHT_TRUESIZE
                    + u64::from(s.queued_segments(i)) * MSS64 * super::QUEUED_TRUESIZE_PCT / 100;
                worst = worst.max(wmem as i64 - sf.sndbuf() as i64);
            }
        }
        assert!(worst > 0, "the buffer never filled: {worst}");
        assert!(worst <= frag as i64, "{worst} bytes past the buffer");
    }

    #[test]
    fn a_sacked_segment_costs_less_memory_so_its_subflow_lingers_less() {
        // Same RTT and window: 410 out of which 200 SACKed (210 x 1,716 + 200 x 1,510 =
        // 662,360 bytes) against 400 out, none SACKed (686,400).
        let mut views = [view(0, 10, 10), view(1, 10, 10)];
        for v in views.iter_mut() {
            v.cwnd = 500; // the same pacing rate for both
        }
        views[0].packets_out = 410;
        views[0].sacked_out = 200;
        views[1].packets_out = 400;
        let mut l = LinuxSched::new();
        l.avg_pacing = vec![0; 2];
        l.queues = vec![VecDeque::new(); 2];
        assert_eq!(l.wmem(&views[0], 1424), 662_360);
        assert_eq!(l.pick(&views, 1424), Some(0));
        // Counted at the in-flight cost, the SACKed segments would make it linger more.
        views[0].sacked_out = 0;
        assert_eq!(l.pick(&views, 1424), Some(1));
    }

    fn view(id: usize, srtt_ms: u64, packets_out: u32) -> SubflowView {
        SubflowView {
            id,
            established: true,
            cwnd: 10,
            ssthresh: INFINITE_SSTHRESH,
            in_flight: packets_out,
            cwnd_space: 10 - packets_out,
            srtt: Dur::from_millis(srtt_ms),
            min_rtt: Dur::from_millis(srtt_ms),
            packets_out,
            sndbuf: 1 << 20,
            ..Default::default()
        }
    }

    #[test]
    fn the_subflow_whose_queue_drains_first_wins_even_if_its_rtt_is_longer() {
        // Pacing rates (slow start, 2 x cwnd x 1,448 B / srtt): 23.2 Mbit/s at 10 ms, 11.6 at
        // 20 ms. 30 segments queued at 10 ms linger longer than 10 at 20 ms.
        let views = [view(0, 10, 10), view(1, 20, 10)];
        let mut l = LinuxSched::new();
        l.avg_pacing = vec![0; 2];
        l.queues = vec![VecDeque::new(); 2];
        l.queues[0].extend(100..120);
        assert_eq!(l.pick(&views, 1424), Some(1));
        // 50 at 20 ms linger longer than 30 at 10 ms.
        l.queues[1].extend(200..240);
        assert_eq!(l.pick(&views, 1424), Some(0));
        // The subflow that lingers least is chosen even with a full window, and not at all
        // when its buffer is full: 10 segments in flight and 20 queued, counted as the
        // kernel's memory (47,064 bytes).
        let wmem = 10 * super::INFLIGHT_TRUESIZE + 20 * 1424 * super::QUEUED_TRUESIZE_PCT / 100;
        assert_eq!(wmem, 47_064);
        let mut full = views;
        full[0].sndbuf = wmem;
        assert_eq!(l.pick(&full, 1424), None);
        full[0].sndbuf = wmem + 1;
        assert_eq!(l.pick(&full, 1424), Some(0));
    }

    #[test]
    fn the_backup_subflow_is_used_only_when_no_regular_one_is_active() {
        let mut s = sender(
            "linux",
            Setup {
                rtts_ms: vec![10, 100],
                backup: vec![true, false],
                ..Setup::default()
            },
        );
        s.start(ms(0));
        let out = drain(&mut s);
        // The regular 100 ms subflow only, though the backup is faster.
        assert_eq!(on(&out, 1), (0..10).collect::<Vec<_>>());
        assert!(on(&out, 0).is_empty());
    }
}

//! The upstream Linux MPTCP scheduler (kernel 5.x/6.x, `mptcp_subflow_get_send` in
//! net/mptcp/protocol.c): the subflow that will drain its queue soonest gets a burst.
//!
//! ```text
//! if the last burst is not used up and its subflow may still send:   # 5.x "re-use last
//!     send the next segment there                                     # subflow"
//! for each established subflow s:
//!     nr_active += not backup[s]
//!     if avg_pace[s] == 0: avg_pace[s] <- pacing_rate[s]   (skip s if still 0)
//!     linger[s] <- queued_bytes[s] x 2^32 / avg_pace[s]
//!     keep the smallest linger among regular and among backup subflows
//! chosen <- best regular; if nr_active == 0: best backup
//! burst  <- min(65,428 bytes, receive window right edge - next new byte)
//! avg_pace[chosen] <- (avg_pace x queued + pacing_rate x burst) / (burst + queued)
//! send bursts on chosen until `burst` bytes are used or it has no window space
//! ```
//!
//! The model's reading:
//! - Queued bytes (`sk_wmem_queued`) are the payload of the subflow's segments sent and not
//!   cumulatively ACKed (the kernel also counts skb overhead, which scales all subflows alike).
//! - Only subflows with congestion-window space are candidates: the kernel would hand the
//!   burst to the subflow's own send queue even when its window is full (the queued bytes then
//!   lengthen its linger time), but here a segment is sent the moment it is scheduled. "Active"
//!   (counted in nr_active) is still every established subflow, so a regular subflow with a
//!   full window keeps backups idle, as in the kernel.
//! - The burst persists across decisions (Linux 5.x kept `msk->last_snd` and `snd_burst`; 6.x
//!   spends it within one push).
//! - Reinjections: upstream retransmits at the MPTCP level (`mptcp_subflow_get_retrans`) only
//!   on an active subflow whose TCP queues are empty, regular before backup. The model's
//!   reinjection queue (data held by a subflow that timed out) follows that rule: a queued
//!   segment goes out on an idle subflow with window space that has not carried it, or waits.
//! - `pacing_rate` is the subflow's `tcp_update_pacing_rate` value (the view's
//!   `pacing_rate_bps`).

use super::{Decision, Reason, SchedCtx, Scheduler, SubflowSet, SubflowView};

/// `MPTCP_SEND_BURST_SIZE`: 64 KiB minus the TCP/IP header and option space (65,428 bytes).
pub const SEND_BURST_BYTES: u64 = 65_428;

#[derive(Default)]
pub struct LinuxSched {
    /// Per subflow `avg_pacing_rate` (bits per second; 0 = not yet set).
    avg_pacing: Vec<u64>,
    /// `msk->last_snd` and `msk->snd_burst`.
    last: Option<usize>,
    burst_left: u64,
}

impl LinuxSched {
    pub fn new() -> LinuxSched {
        LinuxSched::default()
    }

    fn can_send(v: &SubflowView) -> bool {
        v.established && v.cwnd_space > 0
    }

    /// `mptcp_subflow_get_send` without its burst bookkeeping.
    fn pick(&mut self, views: &[SubflowView], mss: u32) -> Option<usize> {
        let mut best: [Option<(u128, usize)>; 2] = [None, None];
        let mut nr_active = 0;
        for v in views.iter().filter(|v| v.established) {
            nr_active += u32::from(!v.backup);
            if self.avg_pacing[v.id] == 0 {
                self.avg_pacing[v.id] = v.pacing_rate_bps();
            }
            let pace = self.avg_pacing[v.id];
            if pace == 0 || !Self::can_send(v) {
                continue;
            }
            let queued = v.packets_out as u128 * mss as u128;
            let linger = (queued << 32) / pace as u128;
            let slot = &mut best[usize::from(v.backup)];
            if slot.is_none_or(|(l, _)| linger < l) {
                *slot = Some((linger, v.id));
            }
        }
        if nr_active == 0 {
            best[0] = best[1];
        }
        best[0].map(|(_, id)| id)
    }

    /// `mptcp_subflow_get_retrans`: an idle subflow (nothing queued) that has not carried
    /// `dseq`, regular before backup.
    fn pick_retrans(views: &[SubflowView], carried: SubflowSet) -> Option<usize> {
        let idle = |backup: bool| {
            views
                .iter()
                .find(|v| {
                    Self::can_send(v)
                        && v.backup == backup
                        && v.packets_out == 0
                        && !carried.contains(v.id)
                })
                .map(|v| v.id)
        };
        idle(false).or_else(|| idle(true))
    }
}

impl Scheduler for LinuxSched {
    fn name(&self) -> &'static str {
        "linux"
    }

    fn next(&mut self, ctx: &mut SchedCtx) -> Option<Decision> {
        let views = ctx.subflows();
        if self.avg_pacing.len() < views.len() {
            self.avg_pacing.resize(views.len(), 0);
        }
        for dseq in ctx.reinject_queue() {
            if let Some(j) = Self::pick_retrans(views, ctx.sent_on(dseq)) {
                return Some(Decision {
                    dseq,
                    subflows: SubflowSet::one(j),
                    reason: Reason::Reinjection,
                });
            }
        }
        let dseq = ctx.first_unsent()?;
        if !ctx.in_window(dseq) {
            return None;
        }
        let len = ctx.seg_len(dseq) as u64;
        // Re-use the last subflow while the burst allows.
        if let Some(j) = self.last {
            if self.burst_left > 0 && Self::can_send(&views[j]) {
                self.burst_left = self.burst_left.saturating_sub(len);
                return Some(Decision {
                    dseq,
                    subflows: SubflowSet::one(j),
                    reason: Reason::New,
                });
            }
        }
        let j = self.pick(views, ctx.mss())?;
        let v = views[j];
        let right_edge = ctx.data_una() * ctx.mss() as u64 + ctx.window_bytes();
        let burst = SEND_BURST_BYTES.min(right_edge.saturating_sub(ctx.bytes_sent()));
        let wmem = v.packets_out as u64 * ctx.mss() as u64;
        if burst > 0 {
            let avg = self.avg_pacing[j] as u128;
            self.avg_pacing[j] = ((avg * wmem as u128
                + v.pacing_rate_bps() as u128 * burst as u128)
                / (burst + wmem) as u128) as u64;
        }
        self.last = Some(j);
        self.burst_left = burst.saturating_sub(len);
        Some(Decision {
            dseq,
            subflows: SubflowSet::one(j),
            reason: Reason::New,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::SEND_BURST_BYTES;
    use crate::sched::testkit::*;

    #[test]
    fn the_subflow_that_drains_soonest_gets_the_data() {
        let mut s = sender("linux", Setup::default());
        s.start(ms(0));
        let out = drain(&mut s);
        // Nothing queued anywhere: linger 0 on both, the first wins; its window (10) ends the
        // burst early, then the other subflow (still linger 0) gets the next.
        assert_eq!(on(&out, 0), (0..10).collect::<Vec<_>>());
        assert_eq!(on(&out, 1), (10..20).collect::<Vec<_>>());
        // Both have 10 queued, then 8 on the 10 ms subflow after its ACK: its pacing rate is
        // ten times the 100 ms one's, so it drains first and takes everything it has room for.
        s.handle_ack(ms(10), &ack(0, 2, 0, 1000));
        let out = drain(&mut s);
        assert_eq!(on(&out, 0), (20..24).collect::<Vec<_>>());
        assert!(on(&out, 1).is_empty());
    }

    #[test]
    fn a_subflow_keeps_its_burst_of_65428_bytes_then_the_choice_is_made_again() {
        assert_eq!(SEND_BURST_BYTES.div_ceil(MSS64), 46);
        // Two 10 ms subflows. Each round both send, everything is ACKed while the receive
        // window stays shut, and then it opens: windows 10 -> 20 -> 40 -> 80.
        let mut s = sender(
            "linux",
            Setup {
                rtts_ms: vec![10, 10],
                rwnd_segments: 20,
                ..Setup::default()
            },
        );
        s.start(ms(0));
        assert_eq!(drain(&mut s).len(), 20);
        let mut t = 0;
        let mut edge = 20;
        let ack_all = |s: &mut crate::conn::Sender, t: &mut u64, edge: u64| {
            for sf in 0..2u8 {
                *t += 1;
                let tx = &s.subflows()[sf as usize];
                let (nxt, una) = (tx.snd_nxt(), tx.snd_una());
                let data_ack = s.data().una() + nxt - una;
                s.handle_ack(ms(*t), &ack(sf, nxt, data_ack, edge - data_ack));
                assert!(drain(s).is_empty());
            }
        };
        for open in [40, 80] {
            ack_all(&mut s, &mut t, edge);
            t += 1;
            s.handle_ack(ms(t), &ack(0, s.subflows()[0].snd_nxt(), edge, open));
            edge += open;
            let out = drain(&mut s);
            // Each subflow fills its window.
            assert_eq!(on(&out, 0).len() as u64, open / 2);
            assert_eq!(on(&out, 1).len() as u64, open / 2);
        }
        ack_all(&mut s, &mut t, edge);
        assert_eq!(s.subflows()[0].cwnd_space(), 80);
        assert_eq!(s.subflows()[1].cwnd_space(), 80);
        // A window of 200 opens. Nothing is queued anywhere (linger 0 on both): the first
        // subflow takes a burst of 46 segments, though the other lingers less from its first
        // segment on; then the other gets its burst; then the first again, up to its window.
        t += 1;
        s.handle_ack(ms(t), &ack(0, s.subflows()[0].snd_nxt(), edge, 200));
        let mut runs: Vec<(u8, usize)> = vec![];
        for (sf, _, _) in drain(&mut s) {
            match runs.last_mut() {
                Some((x, n)) if *x == sf => *n += 1,
                _ => runs.push((sf, 1)),
            }
        }
        assert_eq!(runs, vec![(0, 46), (1, 46), (0, 34), (1, 34)]);
    }

    #[test]
    fn the_subflow_with_the_shorter_queue_wins_even_if_its_rtt_is_longer() {
        // 10 ms and 20 ms, the receive window shut after the first 20 segments. The 10 ms
        // subflow gets half of its segments ACKed, the 20 ms one all of them. When the window
        // opens both have room; the 10 ms one still has 5 queued, the 20 ms one none: the
        // 20 ms one drains first (linger 0) and takes the data, where LowRTT picks the 10 ms
        // one.
        let run = |scheduler: &str| {
            let mut s = sender(
                scheduler,
                Setup {
                    rtts_ms: vec![10, 20],
                    rwnd_segments: 20,
                    ..Setup::default()
                },
            );
            s.start(ms(0));
            assert_eq!(drain(&mut s).len(), 20);
            s.handle_ack(ms(10), &ack(0, 5, 5, 15));
            s.handle_ack(ms(20), &ack(1, 10, 5, 15));
            assert!(drain(&mut s).is_empty());
            s.handle_ack(ms(21), &ack(1, 10, 5, 25));
            drain(&mut s)
        };
        let out = run("linux");
        assert_eq!(on(&out, 1), (20..30).collect::<Vec<_>>());
        let out = run("minrtt");
        assert_eq!(on(&out, 0), (20..30).collect::<Vec<_>>());
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

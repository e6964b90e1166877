//! BLEST (`blest`), the send-window BLocking ESTimation scheduler: Ferlin, Alay, Mehani,
//! Boreli, "BLEST: Blocking Estimation-based MPTCP Scheduler for Heterogeneous Networks", IFIP
//! Networking 2016 (the send-window blocking estimate and its correction factor lambda);
//! constants and refinements from the authors' kernel module `net/mptcp/mptcp_blest.c`
//! (out-of-tree Linux MPTCP v0.95).
//!
//! LowRTT picks the fastest subflow with window space. When that is a slower subflow s, BLEST
//! asks whether the segment, occupying the shared send window until s delivers it, would keep
//! the fastest subflow f from sending what it could send meanwhile. If so it sends nothing
//! and waits for f.
//!
//! ```text
//! f <- established subflow with the lowest srtt;  s <- LowRTT's choice
//! if s != f:
//!     update lambda                               (at most once per srtt_min[s])
//!     # how long the segment stays in the window: s's RTT, interpolated between the smallest
//!     # and largest srtt s has had by how full its window is
//!     linger <- max(srtt[s], srtt_min[s] + (srtt_max[s] - srtt_min[s]) x (in_flight[s]+1) / cwnd[s])
//!               (srtt_max[s] when in_flight[s] + 1 >= cwnd[s])
//!     # what f sends in that time under Reno: n of its RTTs, rtt_f = (srtt_min[f] + srtt_max[f]) / 2
//!     n <- floor(linger / rtt_f) + 1
//!     X <- cwnd[f] x (2^n - 1)                     in f's initial slow start (n <= 16)
//!          n x cwnd'[f] + n (n - 1) / 2,  cwnd'[f] = max(cwnd[f], ssthresh[f] + 1)  otherwise
//!     if lambda x X x MSS > send_window - (segment + queued[s] x MSS): wait
//! send the segment on s (LowRTT, reinjections first); when the receive window blocks new
//! data, the default's opportunistic retransmission with penalisation (every slower subflow
//! holding the left edge is halved), which also flags a retransmission for lambda
//! ```
//!
//! lambda corrects the estimate: it starts at 1.2, goes up by 0.04 after a retransmission
//! (the estimate let the slow subflow block the window) and down by 0.01 otherwise, within
//! [1.0, 1.3] (`blestsched_update_lambda`).
//!
//! Deviation: the kernel computes (n - 1) / 2 in integers, under-counting by n / 2 segments
//! for even n; here the sum cwnd + (cwnd + 1) + ... + (cwnd + n - 1) is exact.

use super::default::RcvBufOpt;
use crate::cc::INFINITE_SSTHRESH;
use crate::sched::{
    fastest_in_use, lowest_rtt_available, reinjection_subflow, Decision, ParamError, ParamInfo,
    Reason, SchedCtx, SchedInfo, SchedParams, Scheduler, SubflowSet,
};
use crate::time::{Dur, Time};

pub const INFO: SchedInfo = SchedInfo {
    name: "blest",
    description: "LowRTT that skips the slower subflow when its segment would block the \
                  fastest one in the send window",
    source: "Ferlin et al., IFIP Networking 2016; Linux out-of-tree mptcp_blest.c",
    params: &[
        ParamInfo {
            key: "lambda",
            default: "1.2",
            meaning: "the blocking estimate's correction factor to start with (clamped into \
                      [lambda_min, lambda_max] when absent)",
        },
        ParamInfo {
            key: "lambda_min",
            default: "1.0",
            meaning: "the smallest lambda",
        },
        ParamInfo {
            key: "lambda_max",
            default: "1.3",
            meaning: "the largest lambda",
        },
        ParamInfo {
            key: "lambda_up",
            default: "0.04",
            meaning: "lambda's step up after a retransmission (mptcp_blest.c)",
        },
        ParamInfo {
            key: "lambda_down",
            default: "0.01",
            meaning: "lambda's step down otherwise",
        },
    ],
    build: |p| Ok(Box::new(Blest::from_params(p)?)),
};

/// Fixed point for lambda (the kernel keeps thousandths; millionths here).
const ONE: i64 = 1_000_000;

#[derive(Debug)]
pub struct Blest {
    lambda: i64,
    lambda_min: i64,
    lambda_max: i64,
    lambda_up: i64,
    lambda_down: i64,
    last_lambda_update: Option<Time>,
    /// A retransmission happened since lambda was last updated.
    retrans_flag: bool,
    /// Per subflow: the smallest and largest srtt seen.
    srtt_min: Vec<Dur>,
    srtt_max: Vec<Dur>,
    rbuf: RcvBufOpt,
}

fn fixed(x: f64) -> i64 {
    (x * ONE as f64).round() as i64
}

impl Blest {
    pub fn from_params(p: &SchedParams) -> Result<Blest, ParamError> {
        let lo = p.num("lambda_min", 1.0, 0.1, 10.0)?;
        let hi = p.num("lambda_max", 1.3, lo, 10.0)?;
        let lambda = p.num("lambda", 1.2_f64.clamp(lo, hi), lo, hi)?;
        let up = p.num("lambda_up", 0.04, 0.0, 1.0)?;
        let down = p.num("lambda_down", 0.01, 0.0, 1.0)?;
        Ok(Blest {
            lambda: fixed(lambda),
            lambda_min: fixed(lo),
            lambda_max: fixed(hi),
            lambda_up: fixed(up),
            lambda_down: fixed(down),
            last_lambda_update: None,
            retrans_flag: false,
            srtt_min: Vec::new(),
            srtt_max: Vec::new(),
            rbuf: RcvBufOpt::new(true),
        })
    }

    /// `blestsched_update_lambda`, at most once per smallest srtt of the slow subflow.
    fn update_lambda(&mut self, ctx: &mut SchedCtx, slow: usize) {
        let last = *self.last_lambda_update.get_or_insert(ctx.now);
        if ctx.now.saturating_since(last) < self.srtt_min[slow] {
            return;
        }
        let before = self.lambda;
        if self.retrans_flag {
            self.lambda += self.lambda_up;
        } else {
            self.lambda -= self.lambda_down;
        }
        self.retrans_flag = false;
        self.lambda = self.lambda.clamp(self.lambda_min, self.lambda_max);
        self.last_lambda_update = Some(ctx.now);
        if self.lambda != before {
            ctx.record("blest_lambda", self.lambda as f64 / ONE as f64);
        }
    }

    /// How long a segment sent now on `s` occupies the send window.
    fn linger_time(&self, ctx: &SchedCtx, s: usize) -> Dur {
        let v = &ctx.subflows()[s];
        let (min, max) = (self.srtt_min[s], self.srtt_max[s]);
        let inflight = v.in_flight as u64 + 1;
        let cwnd = v.cwnd.max(1) as u64;
        let estimate = if inflight >= cwnd {
            max
        } else {
            min + Dur((max.0 - min.0) * inflight / cwnd)
        };
        estimate.max(v.srtt)
    }

    /// Bytes the fast subflow `f` would send during `time`, times lambda.
    fn fast_bytes(&self, ctx: &SchedCtx, f: usize, time: Dur) -> u128 {
        let v = &ctx.subflows()[f];
        let avg = (self.srtt_min[f].0 + self.srtt_max[f].0) / 2;
        // RTTs elapsed, rounded up (one when there is no RTT yet).
        let n = time.0.checked_div(avg).map_or(1, |k| k + 1) as u128;
        let cwnd = v.cwnd as u128;
        let packets = if v.ssthresh >= INFINITE_SSTHRESH {
            // Initial slow start: cwnd + 2 cwnd + 4 cwnd + ...
            cwnd * ((1u128 << n.min(16)) - 1)
        } else {
            // Congestion avoidance from the window it would jump to.
            let ca = cwnd.max(v.ssthresh as u128 + 1);
            n * ca + n * (n - 1) / 2
        };
        packets * ctx.mss() as u128 * self.lambda as u128 / ONE as u128
    }

    /// Whether sending `seg_len` bytes on `s` now would block the fastest subflow `f`.
    fn blocks(&mut self, ctx: &mut SchedCtx, s: usize, f: usize, seg_len: u32) -> bool {
        if s == f {
            return false;
        }
        self.update_lambda(ctx, s);
        let linger = self.linger_time(ctx, s);
        let fast = self.fast_bytes(ctx, f, linger);
        let slow = seg_len as u64 + ctx.subflows()[s].packets_out as u64 * ctx.mss() as u64;
        let avail = ctx.window_bytes().saturating_sub(slow);
        fast > avail as u128
    }
}

impl Scheduler for Blest {
    fn name(&self) -> &'static str {
        INFO.name
    }

    fn next(&mut self, ctx: &mut SchedCtx) -> Option<Decision> {
        let n = ctx.subflows().len();
        if self.srtt_min.len() < n {
            self.srtt_min.resize(n, Dur::MAX);
            self.srtt_max.resize(n, Dur::ZERO);
        }
        self.rbuf.init(ctx);
        // Track each established subflow's srtt range; the fast one is the fastest in use
        // (regular, or backup when no regular one can send), window space or not.
        for v in ctx.subflows().iter().filter(|v| v.established) {
            self.srtt_min[v.id] = self.srtt_min[v.id].min(v.srtt);
            self.srtt_max[v.id] = self.srtt_max[v.id].max(v.srtt);
        }
        let fast = fastest_in_use(ctx.subflows()).map(|v| v.id)?;

        // Segments queued for reinjection go first, through the same test.
        let reinject = ctx.reinject_queue().find_map(|d| {
            reinjection_subflow(ctx.subflows(), ctx.sent_on(d), SubflowSet::EMPTY).map(|s| (d, s))
        });
        if let Some((dseq, s)) = reinject {
            let len = ctx.seg_len(dseq);
            if self.blocks(ctx, s, fast, len) {
                return None;
            }
            return Some(Decision {
                dseq,
                subflows: SubflowSet::one(s),
                reason: Reason::Reinjection,
            });
        }

        let s = lowest_rtt_available(ctx.subflows(), SubflowSet::EMPTY)?;
        match ctx.first_unsent() {
            Some(dseq) => {
                let len = ctx.seg_len(dseq);
                if self.blocks(ctx, s, fast, len) {
                    return None;
                }
                if ctx.in_window(dseq) {
                    return Some(Decision {
                        dseq,
                        subflows: SubflowSet::one(s),
                        reason: Reason::New,
                    });
                }
                // The receive window blocks new data.
                if n < 2 {
                    return None;
                }
                self.retrans_flag = true;
                self.rbuf.run(ctx, s)
            }
            None if n > 1 && ctx.sndbuf_full() => {
                if self.blocks(ctx, s, fast, ctx.mss()) {
                    return None;
                }
                self.retrans_flag = true;
                self.rbuf.run(ctx, s)
            }
            None => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::sched::testkit::*;
    use crate::sched::SchedParams;

    /// 10 ms and 100 ms subflows, initial windows of 10. The fast one fills its window
    /// first; then LowRTT would use the slow one.
    fn first_burst(rwnd_segments: u64) -> Vec<(u8, u64, u64)> {
        let mut s = sender_with(
            "blest",
            &SchedParams::new(),
            &[10, 100],
            rwnd_segments,
            None,
        );
        s.start(ms(0));
        let out = drain(&mut s);
        assert_eq!(s.stats.sched_rejects, 0);
        out
    }

    #[test]
    fn waits_for_the_fast_subflow_when_the_slow_one_would_block_the_window() {
        // linger = 100 ms, the fast subflow's RTT 10 ms: n = 11 RTTs in slow start,
        // 10 x (2^11 - 1) = 20,470 segments x 1.2 >> a 1,000-segment window.
        let out = first_burst(1000);
        assert_eq!(on(&out, 0), (0..10).collect::<Vec<_>>());
        assert!(on(&out, 1).is_empty());
    }

    #[test]
    fn uses_the_slow_subflow_when_the_window_has_room() {
        // 1.2 x 20,470 x 1448 B = 35.6 MB: a window of 30,000 segments (43 MB) leaves room.
        let out = first_burst(30_000);
        assert_eq!(on(&out, 1), (10..20).collect::<Vec<_>>());
        // 28,000 segments (40.5 MB) still leave room for all ten; 24,000 (34.8 MB) not for
        // one.
        assert_eq!(on(&first_burst(28_000), 1).len(), 10);
        assert!(on(&first_burst(24_000), 1).is_empty());
    }

    #[test]
    fn lambda_falls_once_per_slow_rtt_without_retransmissions() {
        // A window of 24,448 segments (35.40 MB): with lambda = 1.2 the estimate (35.57 MB)
        // does not fit, with 1.19 (35.27 MB) it does. The slow subflow's smallest srtt is
        // 100 ms: lambda may change 100 ms after the first decision, not before.
        let mut s = sender_with("blest", &SchedParams::new(), &[10, 100], 24_448, None);
        s.start(ms(0));
        assert!(on(&drain(&mut s), 1).is_empty());
        s.handle_timeout(ms(99));
        assert!(on(&drain(&mut s), 1).is_empty());
        s.handle_timeout(ms(100));
        assert_eq!(on(&drain(&mut s), 1), (10..20).collect::<Vec<_>>());
        let lambda: Vec<f64> = s
            .take_sched_samples()
            .iter()
            .filter(|x| x.key == "blest_lambda")
            .map(|x| x.value)
            .collect();
        assert_eq!(lambda, vec![1.19]);
    }

    #[test]
    fn lambda_is_a_parameter_of_the_estimate() {
        // With lambda = 1.0 the estimate is 29.6 MB; a 24,000-segment window now has room.
        let p = params(&[("lambda", 1.0)]);
        let mut s = sender_with("blest", &p, &[10, 100], 24_000, None);
        s.start(ms(0));
        assert_eq!(on(&drain(&mut s), 1).len(), 10);
    }
}

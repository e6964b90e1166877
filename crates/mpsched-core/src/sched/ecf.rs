//! ECF, Earliest Completion First (`ecf`): Lim, Nahum, Towsley, Gibbens, "ECF: An MPTCP Path
//! Scheduler to Manage Heterogeneous Paths", CoNEXT 2017, Algorithm 1; the authors' kernel
//! module `net/mptcp/mptcp_ecf.c` (out-of-tree Linux MPTCP v0.95).
//!
//! LowRTT picks the fastest subflow with window space. When that is a slower subflow s while
//! the fastest one f is busy, ECF compares when the data still to be sent would be done:
//! waiting for f takes one RTT of f plus the RTTs to send x bytes at f's window, using s takes
//! s's RTT (plus a margin delta for RTT variation). It waits for f if that finishes first, and
//! if s could not finish its part before f anyway:
//!
//! ```text
//! f <- established subflow with the lowest srtt;  s <- LowRTT's choice
//! if s != f:
//!     k <- bytes written and not yet sent
//!     x_f <- max(k, cwnd_f x MSS);  x_s <- max(k, cwnd_s x MSS)
//!     delta <- max(rttvar_f, rttvar_s)
//!     if srtt_f x (x_f + cwnd_f x MSS) < cwnd_f x MSS x (srtt_s + delta) x (1 + beta x waiting):
//!         if srtt_s x x_s >= cwnd_s x MSS x (2 srtt_f + delta):
//!             waiting <- 1; send nothing (wait for f)
//!         (else use s)
//!     else:
//!         waiting <- 0 (use s)
//! send on s (reinjections first); when the receive window blocks new data, the default's
//! opportunistic retransmission with penalisation (ECF's module runs the default's
//! `mptcp_next_segment`)
//! ```
//!
//! With n = 1 + x_f / cwnd_f the first test is Algorithm 1's n x RTT_f < (1 + waiting x beta)
//! x (RTT_s + delta), multiplied by cwnd_f x MSS; the second is x_s / cwnd_s x RTT_s >=
//! 2 RTT_f + delta. `beta` = 0.25 is the hysteresis that keeps ECF from flapping between
//! waiting and sending. The inequality is the one of REFERENCE.md, as the authors' module
//! computes it: x counts at least one congestion window, since whatever is sent takes at
//! least one round trip (default, `x = "window"`); `x = "unsent"` uses k alone, which sends
//! the last few segments of a transfer on the slow subflow.
//!
//! delta: the paper's max of the two RTT standard deviations; here RFC 6298's RTTVAR of each
//! subflow. (The kernel's `rttvar_us >> 1` is twice Linux's RTTVAR, which Linux never lets fall
//! below 50 ms: a delta of at least 100 ms.)

use super::default::RcvBufOpt;
use crate::sched::{
    fastest_in_use, lowest_rtt_available, reinjection_subflow, Decision, ParamError, ParamInfo,
    Reason, SchedCtx, SchedInfo, SchedParams, Scheduler, SubflowSet,
};

pub const INFO: SchedInfo = SchedInfo {
    name: "ecf",
    description: "earliest completion first: wait for the fastest subflow when a slower one \
                  would finish later",
    source: "Lim et al., CoNEXT 2017, Algorithm 1; Linux out-of-tree mptcp_ecf.c",
    params: &[
        ParamInfo {
            key: "beta",
            default: "0.25",
            meaning: "the hysteresis of waiting for the fastest subflow",
        },
        ParamInfo {
            key: "x",
            default: "\"window\"",
            meaning: "the data to send counts at least one congestion window (mptcp_ecf.c), \
                      or \"unsent\": the unsent data alone",
        },
    ],
    build: |p| Ok(Box::new(Ecf::from_params(p)?)),
};

#[derive(Debug)]
pub struct Ecf {
    beta: f64,
    /// Count at least one congestion window in the bytes to send (`x = "window"`).
    window_floor: bool,
    waiting: bool,
    rbuf: RcvBufOpt,
}

impl Ecf {
    pub fn from_params(p: &SchedParams) -> Result<Ecf, ParamError> {
        let beta = p.num("beta", 0.25, 0.0, 10.0)?;
        let window_floor = p.choice("x", "window", &["window", "unsent"])? == "window";
        Ok(Ecf {
            beta,
            window_floor,
            waiting: false,
            rbuf: RcvBufOpt::new(false),
        })
    }

    /// Bytes written and never sent. ECF sends in data order (reinjections and opportunistic
    /// retransmissions resend segments already sent), so they are the contiguous tail.
    fn unsent_bytes(ctx: &SchedCtx) -> u64 {
        match ctx.first_unsent() {
            None => 0,
            Some(first) => {
                let last = ctx.written_end() - 1;
                (last - first) * ctx.mss() as u64 + ctx.seg_len(last) as u64
            }
        }
    }

    /// Whether to leave slower subflow `s` unused and wait for the fastest one, `f`.
    fn wait_for_fastest(&mut self, ctx: &mut SchedCtx, s: usize, f: usize) -> bool {
        if s == f {
            return false;
        }
        let (vf, vs) = (ctx.subflows()[f], ctx.subflows()[s]);
        let input = Inputs {
            k: Self::unsent_bytes(ctx) as f64,
            mss: ctx.mss() as f64,
            cwnd_f: vf.cwnd as f64,
            cwnd_s: vs.cwnd as f64,
            srtt_f: vf.srtt.as_nanos() as f64,
            srtt_s: vs.srtt.as_nanos() as f64,
            delta: vf.rttvar.max(vs.rttvar).as_nanos() as f64,
        };
        let (wait, waiting) = decide(&input, self.beta, self.window_floor, self.waiting);
        if waiting != self.waiting {
            ctx.record("ecf_waiting", if waiting { 1.0 } else { 0.0 });
        }
        self.waiting = waiting;
        wait
    }
}

/// What Algorithm 1 looks at (bytes, segments, nanoseconds).
struct Inputs {
    k: f64,
    mss: f64,
    cwnd_f: f64,
    cwnd_s: f64,
    srtt_f: f64,
    srtt_s: f64,
    delta: f64,
}

/// Algorithm 1's two tests: whether to wait for the fastest subflow, and the new `waiting`.
fn decide(i: &Inputs, beta: f64, window_floor: bool, waiting: bool) -> (bool, bool) {
    let (win_f, win_s) = (i.cwnd_f * i.mss, i.cwnd_s * i.mss);
    let (x_f, x_s) = if window_floor {
        (i.k.max(win_f), i.k.max(win_s))
    } else {
        (i.k, i.k)
    };
    let margin = 1.0 + beta * if waiting { 1.0 } else { 0.0 };
    if i.srtt_f * (x_f + win_f) < win_f * (i.srtt_s + i.delta) * margin {
        if i.srtt_s * x_s >= win_s * (2.0 * i.srtt_f + i.delta) {
            // The slow subflow would not finish its part before the fast one: wait.
            return (true, true);
        }
        (false, waiting)
    } else {
        (false, false)
    }
}

impl Scheduler for Ecf {
    fn name(&self) -> &'static str {
        INFO.name
    }

    fn next(&mut self, ctx: &mut SchedCtx) -> Option<Decision> {
        self.rbuf.init(ctx);
        let n = ctx.subflows().len();
        let fast = fastest_in_use(ctx.subflows()).map(|v| v.id)?;

        let reinject = ctx.reinject_queue().find_map(|d| {
            reinjection_subflow(ctx.subflows(), ctx.sent_on(d), SubflowSet::EMPTY).map(|s| (d, s))
        });
        if let Some((dseq, s)) = reinject {
            if self.wait_for_fastest(ctx, s, fast) {
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
                if self.wait_for_fastest(ctx, s, fast) {
                    return None;
                }
                if ctx.in_window(dseq) {
                    Some(Decision {
                        dseq,
                        subflows: SubflowSet::one(s),
                        reason: Reason::New,
                    })
                } else if n > 1 {
                    self.rbuf.run(ctx, s)
                } else {
                    None
                }
            }
            None if n > 1 && ctx.sndbuf_full() => {
                if self.wait_for_fastest(ctx, s, fast) {
                    return None;
                }
                self.rbuf.run(ctx, s)
            }
            None => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::sched::testkit::*;
    use crate::sched::{ParamValue, SchedParams};

    /// A file of `segments` over 10 ms and 100 ms subflows (srtt from the handshake,
    /// rttvar = srtt / 2, so delta = 50 ms); returns what went out at the start.
    fn start(segments: u64, p: &SchedParams) -> Vec<(u8, u64, u64)> {
        let mut s = sender_with("ecf", p, &[10, 100], 1000, Some(segments * MSS64));
        s.start(ms(0));
        let out = drain(&mut s);
        assert_eq!(s.stats.sched_rejects, 0);
        out
    }

    #[test]
    fn waits_when_the_fast_subflow_finishes_first() {
        // 30 segments: the fast one takes 10, k = 20 left. Waiting: 10 ms x (20 + 10) = 300 <
        // 10 x (100 + 50) = 1500; and the slow one: 100 x 20 = 2000 >= 10 x (20 + 50) = 700.
        let out = start(30, &SchedParams::new());
        assert_eq!(on(&out, 0), (0..10).collect::<Vec<_>>());
        assert!(on(&out, 1).is_empty());
    }

    #[test]
    fn uses_the_slow_subflow_when_waiting_would_finish_later() {
        // 200 segments: k = 190; 10 x 200 = 2000 >= 1500: the slow subflow takes its window.
        let out = start(200, &SchedParams::new());
        assert_eq!(on(&out, 1), (10..20).collect::<Vec<_>>());
    }

    #[test]
    fn the_waiting_hysteresis_and_the_window_floor() {
        // 155 segments, k = 145 after the fast window: 10 x (145 + 10) = 1550 >= 1500, so
        // the slow subflow takes segments until k = 139 (10 x 149 < 1500): six of them.
        assert_eq!(
            on(&start(155, &SchedParams::new()), 1),
            (10..16).collect::<Vec<_>>()
        );
        // 12 segments, k = 2: with the window floor the slow subflow would still take one RTT
        // (100 x 10 >= 700): wait. With k alone, 100 x 2 = 200 < 700: send both on it.
        assert!(on(&start(12, &SchedParams::new()), 1).is_empty());
        let unsent = SchedParams::new().with("x", ParamValue::Str("unsent".into()));
        assert_eq!(on(&start(12, &unsent), 1), vec![10, 11]);
    }

    #[test]
    fn once_waiting_the_margin_grows_by_beta() {
        use super::{decide, Inputs};
        let at = |k_segments: f64| Inputs {
            k: k_segments * 1448.0,
            mss: 1448.0,
            cwnd_f: 10.0,
            cwnd_s: 10.0,
            srtt_f: 10e6,
            srtt_s: 100e6,
            delta: 50e6,
        };
        // 10 x (150 + 10) = 1600 vs 10 x (100 + 50) = 1500: not waiting -> use s.
        assert_eq!(decide(&at(150.0), 0.25, true, false), (false, false));
        // Already waiting, the bound is 1500 x 1.25 = 1875: keep waiting.
        assert_eq!(decide(&at(150.0), 0.25, true, true), (true, true));
        // 10 x (180 + 10) = 1900 > 1875: stop waiting.
        assert_eq!(decide(&at(180.0), 0.25, true, true), (false, false));
        // Below the bound, but s would finish its part first (30 x 5 < 10 x (20 + 5)): use s,
        // waiting unchanged.
        let mut quick = at(5.0);
        quick.srtt_s = 30e6;
        quick.delta = 5e6;
        assert_eq!(decide(&quick, 0.25, false, true), (false, true));
    }
}

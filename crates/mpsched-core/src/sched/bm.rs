//! LowRTT with bufferbloat mitigation (`bm`): Paasch, Ferlin, Alay, Bonaventure, "Experimental
//! Evaluation of Multipath TCP Schedulers", CSWS 2014, sec. 3.4 (the mechanism of Ferlin et
//! al., "Tackling the Challenge of Bufferbloat in Multi-Path Transport over Heterogeneous
//! Wireless Networks", IWQoS 2014).
//!
//! A subflow whose smoothed RTT drifts away from the smallest one it has shown is filling a
//! router buffer. Its usable window is capped (sec. 3.4, the one equation):
//!
//! ```text
//! cwnd_limit = lambda x (sRTT_min / sRTT) x cwnd,      lambda = 3
//! ```
//!
//! and otherwise the scheduler is LowRTT (sec. 3.2):
//!
//! ```text
//! for each subflow i: srtt_min[i] <- min(srtt_min[i], srtt[i])
//! usable(i) <- available(i) and in_flight[i] < lambda x srtt_min[i] / srtt[i] x cwnd[i]
//! if a segment waits for reinjection: send the oldest on the usable subflow with the lowest
//!     srtt that has not carried it
//! else send the next unsent segment (if the receive window admits it) on the usable subflow
//!     with the lowest srtt
//! ```
//!
//! sRTT_min: the paper defines it on the subflow itself ("whenever sRTT drifts apart from
//! sRTT_min on the same subflow"), the smallest smoothed RTT the subflow has had, which is the
//! default (`srtt_min = "subflow"`). `srtt_min = "connection"` takes instead the smallest
//! current srtt among all subflows, which also caps a path whose base RTT is long.
//! A subflow without an RTT sample is not capped.

use crate::sched::{
    lowest_rtt_available, reinjection_subflow, Decision, ParamError, ParamInfo, Reason, SchedCtx,
    SchedInfo, SchedParams, Scheduler, SubflowSet,
};
use crate::time::Dur;

pub const INFO: SchedInfo = SchedInfo {
    name: "bm",
    description: "LowRTT with bufferbloat mitigation: in flight < lambda x sRTT_min / sRTT x \
                  cwnd",
    source: "Paasch et al., CSWS 2014, sec. 3.4 (after Ferlin et al., IWQoS 2014)",
    params: &[
        ParamInfo {
            key: "lambda",
            default: "3",
            meaning: "a subflow sends while in flight < lambda x sRTT_min / sRTT x cwnd",
        },
        ParamInfo {
            key: "srtt_min",
            default: "\"subflow\"",
            meaning: "sRTT_min is the subflow's own smallest srtt, or \"connection\": the \
                      smallest current srtt of all subflows",
        },
    ],
    build: |p| Ok(Box::new(BufferbloatMitigation::from_params(p)?)),
};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SrttMin {
    /// The smallest srtt the subflow itself has had (the paper).
    Subflow,
    /// The smallest current srtt among all subflows.
    Connection,
}

#[derive(Debug)]
pub struct BufferbloatMitigation {
    lambda: f64,
    mode: SrttMin,
    /// Per subflow: the smallest srtt seen so far.
    srtt_min: Vec<Dur>,
}

impl BufferbloatMitigation {
    pub fn new(lambda: f64, mode: SrttMin) -> BufferbloatMitigation {
        BufferbloatMitigation {
            lambda,
            mode,
            srtt_min: Vec::new(),
        }
    }

    pub fn from_params(p: &SchedParams) -> Result<BufferbloatMitigation, ParamError> {
        let lambda = p.num("lambda", 3.0, 0.1, 100.0)?;
        let mode = match p.choice("srtt_min", "subflow", &["subflow", "connection"])? {
            "subflow" => SrttMin::Subflow,
            _ => SrttMin::Connection,
        };
        Ok(BufferbloatMitigation::new(lambda, mode))
    }

    fn srtt_min_of(&self, ctx: &SchedCtx, i: usize) -> Dur {
        match self.mode {
            SrttMin::Subflow => self.srtt_min[i],
            SrttMin::Connection => ctx
                .subflows()
                .iter()
                .filter(|w| w.established && w.srtt > Dur::ZERO)
                .map(|w| w.srtt)
                .min()
                .unwrap_or(ctx.subflows()[i].srtt),
        }
    }

    /// in_flight >= lambda x srtt_min / srtt x cwnd, in exact integer arithmetic (lambda in
    /// millionths).
    fn at_limit(&self, ctx: &SchedCtx, i: usize) -> bool {
        let v = &ctx.subflows()[i];
        if v.srtt == Dur::ZERO {
            return false;
        }
        let min = self.srtt_min_of(ctx, i);
        let lambda = (self.lambda * 1e6).round() as u128;
        v.in_flight as u128 * v.srtt.as_nanos() as u128 * 1_000_000
            >= lambda * min.as_nanos() as u128 * v.cwnd as u128
    }
}

impl Scheduler for BufferbloatMitigation {
    fn name(&self) -> &'static str {
        INFO.name
    }

    fn next(&mut self, ctx: &mut SchedCtx) -> Option<Decision> {
        let n = ctx.subflows().len();
        if self.srtt_min.len() < n {
            self.srtt_min.resize(n, Dur::MAX);
        }
        for v in ctx.subflows() {
            if v.srtt > Dur::ZERO {
                self.srtt_min[v.id] = self.srtt_min[v.id].min(v.srtt);
            }
        }
        // Subflows at or above their cap are treated as if their window were full.
        let mut capped = SubflowSet::EMPTY;
        for i in 0..n {
            if self.at_limit(ctx, i) {
                capped.insert(i);
            }
        }
        for dseq in ctx.reinject_queue() {
            if let Some(sf) = reinjection_subflow(ctx.subflows(), ctx.sent_on(dseq), capped) {
                return Some(Decision {
                    dseq,
                    subflows: SubflowSet::one(sf),
                    reason: Reason::Reinjection,
                });
            }
        }
        let dseq = ctx.first_unsent()?;
        if !ctx.in_window(dseq) {
            return None;
        }
        let sf = lowest_rtt_available(ctx.subflows(), capped)?;
        Some(Decision {
            dseq,
            subflows: SubflowSet::one(sf),
            reason: Reason::New,
        })
    }
}

#[cfg(test)]
mod tests {
    use crate::sched::testkit::*;
    use crate::sched::{ParamValue, SchedParams};

    /// Subflow 0 (10 ms) has its first ACKs delayed to 200 ms and 400 ms: its srtt grows to
    /// 33.75 ms and then 79.5 ms while its smallest srtt stays 10 ms.
    fn bloated(scheduler: &str, p: &SchedParams) -> (usize, usize) {
        let mut s = sender_with(scheduler, p, &[10, 100], 1000, None);
        s.start(ms(0));
        let out = drain(&mut s);
        assert_eq!(on(&out, 0).len(), 10);
        s.handle_ack(ms(200), &ack(0, 1, 1, 1000));
        let first = on(&drain(&mut s), 0).len();
        s.handle_ack(ms(400), &ack(0, 2, 2, 1000));
        let second = on(&drain(&mut s), 0).len();
        assert_eq!(s.stats.sched_rejects, 0);
        (first, second)
    }

    #[test]
    fn the_cap_follows_the_formula() {
        // LowRTT refills the window: cwnd 11 then 12, one segment ACKed each time.
        assert_eq!(bloated("minrtt", &SchedParams::new()), (2, 2));
        // srtt 33.75 ms: limit = 3 x 10 / 33.75 x 11 = 9.78 > 9 in flight: one segment.
        // srtt 79.5 ms: limit = 3 x 10 / 79.5 x 12 = 4.5 < 9 in flight: none.
        assert_eq!(bloated("bm", &SchedParams::new()), (1, 0));
        // lambda = 10 lifts the cap above the window.
        assert_eq!(bloated("bm", &params(&[("lambda", 10.0)])), (2, 2));
    }

    #[test]
    fn connection_wide_srtt_min_caps_a_long_path_from_the_start() {
        let p = SchedParams::new().with("srtt_min", ParamValue::Str("connection".into()));
        let mut s = sender_with("bm", &p, &[10, 100], 1000, None);
        s.start(ms(0));
        let out = drain(&mut s);
        // 100 ms subflow: limit = 3 x 10 / 100 x 10 = 3 segments.
        assert_eq!(on(&out, 0), (0..10).collect::<Vec<_>>());
        assert_eq!(on(&out, 1), vec![10, 11, 12]);
        // The paper's per-subflow sRTT_min leaves a path at its base RTT alone.
        let mut s = sender_with("bm", &SchedParams::new(), &[10, 100], 1000, None);
        s.start(ms(0));
        assert_eq!(on(&drain(&mut s), 1).len(), 10);
    }
}

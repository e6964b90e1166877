//! MPTCP-SF, a scheduler for web transfers (Yang et al., "A MPTCP Scheduler for Web
//! Transfer", sec. 4): short flows use one path, medium flows the paths whose RTT is close to
//! the best, long flows all of them.
//!
//! Algorithm 2, run before every decision (the paper runs it after each new ACK; the model asks
//! the scheduler after each ACK and each write, and the classification only depends on what
//! has been sent):
//!
//! ```text
//! D     <- bytes of the stream sent so far
//! N'    <- established subflows ordered by smoothed RTT; T_min <- RTT of N'[0]
//! if D < s1_bytes (100 KB):  U <- { N'[0] }                          (class S1)
//! elif D < s2_bytes (400 KB): U <- H1                                 (class S2)
//! else:                       U <- N'                                 (class S3)
//! send with the default scheduler restricted to U
//! ```
//!
//! Algorithm 1 (the set H1): every subflow r of N' with RTT_r / T_min <= lambda (lambda = 4,
//! sec. 5.2).
//!
//! "Default" is the out-of-tree kernel's (`default`: lowest RTT with opportunistic
//! retransmission and penalisation), which the paper switches to for S3; the same policy runs
//! inside U for S1 and S2, the other subflows being treated as having no window space.

use super::default::DefaultSched;
use crate::sched::{
    fastest_in_use, Decision, ParamError, ParamInfo, SchedCtx, SchedInfo, SchedParams, Scheduler,
    SubflowView,
};

pub const INFO: SchedInfo = SchedInfo {
    name: "mptcp-sf",
    description: "flow classification by bytes sent: the fastest subflow below s1_bytes, the \
                  subflows within lambda x min RTT below s2_bytes, then every subflow \
                  (default policy)",
    source: "Yang et al., \"A MPTCP Scheduler for Web Transfer\", Algorithms 1 and 2",
    params: &[
        ParamInfo {
            key: "s1_bytes",
            default: "100000",
            meaning: "the flow-size threshold of class S1 (bytes sent)",
        },
        ParamInfo {
            key: "s2_bytes",
            default: "400000",
            meaning: "the flow-size threshold of class S2, at least s1_bytes",
        },
        ParamInfo {
            key: "lambda",
            default: "4",
            meaning: "class S2 uses the subflows with RTT / RTT_min <= lambda",
        },
    ],
    build: |p| Ok(Box::new(MptcpSf::from_params(p)?)),
};

#[derive(Debug)]
pub struct MptcpSf {
    s1_bytes: u64,
    s2_bytes: u64,
    lambda: f64,
    inner: DefaultSched,
    /// The views with the subflows outside U masked (reused between calls).
    masked: Vec<SubflowView>,
}

impl MptcpSf {
    pub fn from_params(p: &SchedParams) -> Result<MptcpSf, ParamError> {
        let s1 = p.num("s1_bytes", 100_000.0, 0.0, 1e15)?;
        let s2 = p.num("s2_bytes", 400_000.0, 0.0, 1e15)?;
        if s2 < s1 {
            return Err(ParamError::new(
                "s2_bytes",
                format!("must be >= s1_bytes ({s1}), got {s2}"),
            ));
        }
        let lambda = p.num("lambda", 4.0, 1.0, 1e6)?;
        Ok(MptcpSf::new(s1 as u64, s2 as u64, lambda))
    }

    pub fn new(s1_bytes: u64, s2_bytes: u64, lambda: f64) -> MptcpSf {
        MptcpSf {
            s1_bytes,
            s2_bytes,
            lambda,
            inner: DefaultSched::new(),
            masked: Vec::new(),
        }
    }
}

impl Scheduler for MptcpSf {
    fn name(&self) -> &'static str {
        INFO.name
    }

    fn next(&mut self, ctx: &mut SchedCtx) -> Option<Decision> {
        let sent = ctx.bytes_sent();
        let views = ctx.subflows();
        let fastest = fastest_in_use(views)?;
        let (fastest_id, t_min) = (fastest.id, fastest.srtt.as_nanos() as f64);
        let in_u = |v: &SubflowView| {
            if sent < self.s1_bytes {
                v.id == fastest_id
            } else if sent < self.s2_bytes {
                // Algorithm 1, eq. 1.
                v.srtt.as_nanos() as f64 <= self.lambda * t_min
            } else {
                true
            }
        };
        self.masked.clear();
        self.masked.extend(views.iter().map(|v| {
            let mut m = *v;
            if !in_u(v) {
                m.cwnd_space = 0;
            }
            m
        }));
        let mut inner_ctx = SchedCtx {
            now: ctx.now,
            views: &self.masked,
            data: ctx.data,
            shared: &mut *ctx.shared,
        };
        self.inner.next(&mut inner_ctx)
    }
}

#[cfg(test)]
mod tests {
    use crate::sched::testkit::*;
    use crate::sched::ParamValue;

    fn setup(rtts: Vec<u64>, total: Option<u64>) -> Setup {
        Setup {
            rtts_ms: rtts,
            total_bytes: total,
            ..Setup::default()
        }
    }

    #[test]
    fn a_short_flow_uses_only_the_fastest_subflow() {
        // 10, 30 and 100 ms: default would fill all three initial windows at once.
        let mut s = sender("mptcp-sf", setup(vec![30, 10, 100], None));
        s.start(ms(0));
        let out = drain(&mut s);
        assert_eq!(on(&out, 1), (0..10).collect::<Vec<_>>());
        assert!(on(&out, 0).is_empty() && on(&out, 2).is_empty());
        let mut d = sender("default", setup(vec![30, 10, 100], None));
        d.start(ms(0));
        assert_eq!(drain(&mut d).len(), 30);
    }

    #[test]
    fn medium_flows_use_the_subflows_within_lambda_of_the_best_and_long_ones_all() {
        // 10, 30 and 100 ms: H1 = {10, 30} (30 / 10 <= 4 < 100 / 10).
        let mut s = sender("mptcp-sf", setup(vec![10, 30, 100], None));
        s.start(ms(0));
        let mut all = drain(&mut s);
        let mut t = 0;
        // Round trips of the two faster subflows until well past 400 KB; the 100 ms one never
        // gets an ACK, so it sends at most its initial window.
        while s.data().unsent().next().unwrap() * MSS64 < 600_000 {
            let data_ack = s.data().unsent().next().unwrap();
            for sf in 0..2u8 {
                t += 5;
                let nxt = s.subflows()[sf as usize].snd_nxt();
                s.handle_ack(ms(t), &ack(sf, nxt, data_ack, 100_000));
                all.extend(drain(&mut s));
            }
        }
        // Classes by the stream offset of the segment (sent in order, so the offset is what
        // had been sent when it was scheduled).
        let used = |lo: u64, hi: u64| {
            let mut u = [false; 3];
            for &(sf, _, d) in &all {
                if (lo..hi).contains(&(d * MSS64)) {
                    u[sf as usize] = true;
                }
            }
            u
        };
        assert_eq!(used(0, 100_000), [true, false, false]);
        assert_eq!(used(100_000, 400_000), [true, true, false]);
        assert_eq!(used(400_000, u64::MAX), [true, true, true]);
    }

    #[test]
    fn the_thresholds_and_lambda_are_parameters() {
        // With s1 = 0 and lambda = 10 a new flow is in S2 and H1 holds all three.
        let mut s = sender(
            "mptcp-sf",
            Setup {
                rtts_ms: vec![10, 30, 100],
                params: vec![
                    ("s1_bytes", ParamValue::Num(0.0)),
                    ("lambda", ParamValue::Num(10.0)),
                ],
                ..Setup::default()
            },
        );
        s.start(ms(0));
        assert_eq!(drain(&mut s).len(), 30);
        let bad = crate::sched::build(
            "mptcp-sf",
            &crate::sched::SchedParams::new().with("lambda", ParamValue::Num(0.5)),
        );
        assert_eq!(
            bad.err().unwrap().to_string(),
            "lambda: must be in [1, 1000000], got 0.5"
        );
    }
}

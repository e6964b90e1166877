//! Widest window first (`widest`): the next segment goes on the available subflow with the
//! most free congestion window, ties to the lower smoothed RTT.

use crate::sched::{next_reinjection, ParamError, SchedParams};
use crate::sched::{Decision, ParamInfo, Reason, SchedCtx, SchedInfo, Scheduler, SubflowSet};

pub const INFO: SchedInfo = SchedInfo {
    name: "widest",
    description: "the available subflow with the most free congestion window",
    source: "docs/extending.md (an example)",
    params: &[ParamInfo {
        key: "min_space",
        default: "1",
        meaning: "segments of free window a subflow needs before it is used",
    }],
    build: |p| Ok(Box::new(Widest::from_params(p)?)),
};

#[derive(Debug)]
pub struct Widest {
    min_space: u32,
}

impl Widest {
    pub fn from_params(p: &SchedParams) -> Result<Widest, ParamError> {
        Ok(Widest {
            min_space: p.num("min_space", 1.0, 1.0, 1000.0)? as u32,
        })
    }
}

impl Scheduler for Widest {
    fn name(&self) -> &'static str {
        INFO.name
    }

    fn next(&mut self, ctx: &mut SchedCtx) -> Option<Decision> {
        // What a failed subflow held goes first, on a subflow that has not carried it: the
        // connection queues it for the scheduler, and one that ignores the queue strands it.
        if let Some(d) = next_reinjection(ctx) {
            return Some(d);
        }
        let dseq = ctx.first_unsent()?;
        if !ctx.in_window(dseq) {
            return None;
        }
        let sf = ctx
            .subflows()
            .iter()
            .filter(|v| v.available() && v.cwnd_space >= self.min_space)
            .max_by_key(|v| (v.cwnd_space, std::cmp::Reverse(v.srtt)))?
            .id;
        Some(Decision {
            dseq,
            subflows: SubflowSet::one(sf),
            reason: Reason::New,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn min_space_is_read_and_bounded() {
        use crate::sched::ParamValue;
        let p = SchedParams::new().with("min_space", ParamValue::Num(4.0));
        assert_eq!(Widest::from_params(&p).unwrap().min_space, 4);
        let bad = SchedParams::new().with("min_space", ParamValue::Num(0.0));
        assert!(Widest::from_params(&bad).is_err());
    }
}

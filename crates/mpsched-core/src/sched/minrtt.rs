//! LowRTT (`minrtt`): send the next segment on the available subflow with the lowest smoothed
//! RTT (Paasch et al., CSWS 2014, sec. 3.2; the out-of-tree `get_available_subflow`).
//! Segments waiting for reinjection go first, on a subflow they have not been sent on.

use crate::sched::{
    lowest_rtt_available, next_reinjection, Decision, Reason, SchedCtx, SchedInfo, Scheduler,
    SubflowSet,
};

pub const INFO: SchedInfo = SchedInfo {
    name: "minrtt",
    description: "lowest smoothed RTT among subflows with congestion-window space (LowRTT)",
    source: "Paasch et al., CSWS 2014, sec. 3.2; Linux out-of-tree mptcp_sched.c",
    params: &[],
    build: |_| Ok(Box::new(MinRtt::new())),
};

#[derive(Debug, Default)]
pub struct MinRtt;

impl MinRtt {
    pub fn new() -> MinRtt {
        MinRtt
    }
}

impl Scheduler for MinRtt {
    fn name(&self) -> &'static str {
        INFO.name
    }

    fn next(&mut self, ctx: &mut SchedCtx) -> Option<Decision> {
        if let Some(d) = next_reinjection(ctx) {
            return Some(d);
        }
        let dseq = ctx.first_unsent()?;
        if !ctx.in_window(dseq) {
            return None;
        }
        let sf = lowest_rtt_available(ctx.subflows(), SubflowSet::EMPTY)?;
        Some(Decision {
            dseq,
            subflows: SubflowSet::one(sf),
            reason: Reason::New,
        })
    }
}

//! Round robin (Paasch et al., CSWS 2014, sec. 3.1; the out-of-tree `mptcp_rr.c`): one segment
//! per turn, cycling over the subflows that have congestion-window space.

use crate::sched::{Decision, Reason, SchedCtx, SchedInfo, Scheduler, SubflowSet};

pub const INFO: SchedInfo = SchedInfo {
    name: "rr",
    description: "round robin: one segment per turn over subflows with window space",
    source: "Paasch et al., CSWS 2014, sec. 3.1; Linux out-of-tree mptcp_rr.c",
    params: &[],
    build: |_| Ok(Box::new(RoundRobin::new())),
};

#[derive(Debug, Default)]
pub struct RoundRobin {
    last: Option<usize>,
}

impl RoundRobin {
    pub fn new() -> RoundRobin {
        RoundRobin { last: None }
    }
}

impl Scheduler for RoundRobin {
    fn name(&self) -> &'static str {
        INFO.name
    }

    fn next(&mut self, ctx: &mut SchedCtx) -> Option<Decision> {
        let n = ctx.subflows().len();
        let start = self.last.map_or(0, |l| l + 1);
        let next_turn = |exclude: SubflowSet| {
            (0..n)
                .map(|k| (start + k) % n)
                .find(|&i| ctx.subflows()[i].available() && !exclude.contains(i))
        };
        let mut choice = None;
        for dseq in ctx.reinject_queue() {
            if let Some(sf) = next_turn(ctx.sent_on(dseq)) {
                choice = Some((dseq, sf, Reason::Reinjection));
                break;
            }
        }
        let (dseq, sf, reason) = match choice {
            Some(x) => x,
            None => {
                let dseq = ctx.first_unsent()?;
                if !ctx.in_window(dseq) {
                    return None;
                }
                (dseq, next_turn(SubflowSet::EMPTY)?, Reason::New)
            }
        };
        self.last = Some(sf);
        Some(Decision {
            dseq,
            subflows: SubflowSet::one(sf),
            reason,
        })
    }
}

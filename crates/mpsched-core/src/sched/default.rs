//! The out-of-tree Linux MPTCP default scheduler (v0.9x), which the STMS paper calls
//! "Default": LowRTT plus opportunistic retransmission and penalisation (Raiciu et al.,
//! "How Hard Can It Be?", NSDI 2012, sec. 4.2; `mptcp_rcv_buf_optimization` in
//! `net/mptcp/mptcp_sched.c`).
//!
//! When the connection-level window blocks new data (or the send buffer is full and nothing
//! new is left), the segment at the left edge of the window is what holds everything up. If it
//! went out on a slower subflow, send it again on the subflow that has space, and halve the
//! slower subflow's window so it carries less of the stream:
//!
//! ```text
//! cur  <- lowest-RTT available subflow
//! head <- left edge of the send window
//! if blocked and now - last_penalty[cur] >= srtt[cur]:
//!     slow <- first subflow != cur that carried head
//!     if srtt[cur] < srtt[slow] and slow is in CA_Open:
//!         cwnd[slow] <- max(cwnd[slow] / 2, 1); if not in slow start: ssthresh[slow] /= 2
//!         last_penalty[cur] <- now
//! if head not yet sent on cur and, for the subflows that carried it,
//!    (cwnd <= 4 or 4 x srtt[cur] < srtt[them]):
//!     send head on cur
//! ```

use crate::cc::CaState;
use crate::sched::next_reinjection;
use crate::sched::{
    lowest_rtt_available, Decision, Reason, SchedCtx, SchedInfo, Scheduler, SubflowSet,
};
use crate::time::Time;

pub const INFO: SchedInfo = SchedInfo {
    name: "default",
    description: "minrtt plus opportunistic retransmission and penalisation",
    source: "Raiciu et al., NSDI 2012, sec. 4.2; Linux out-of-tree MPTCP v0.9x mptcp_sched.c",
    params: &[],
    build: |_| Ok(Box::new(DefaultSched::new())),
};

#[derive(Debug)]
pub struct DefaultSched {
    rbuf: RcvBufOpt,
}

impl Default for DefaultSched {
    fn default() -> Self {
        DefaultSched::new()
    }
}

impl DefaultSched {
    pub fn new() -> DefaultSched {
        DefaultSched {
            rbuf: RcvBufOpt::new(false),
        }
    }
}

/// The out-of-tree opportunistic retransmission with penalisation
/// (`mptcp_rcv_buf_optimization`; Raiciu et al., NSDI 2012, sec. 4.2), as the kernel modules of
/// BLEST (its own copy) and ECF (the default's, through `mptcp_next_segment`) run it.
///
/// ```text
/// head <- left edge of the send window; cur <- the subflow about to send
/// if now - last_penalty[cur] >= srtt[cur]:
///     for each subflow slow != cur that carried head, slower than cur and in CA_Open:
///         halve slow's window; last_penalty[cur] <- now
///         (the default stops after the first; BLEST's copy halves every one)
/// if head not yet on cur and, for the subflows that carried it,
///    (cwnd <= 4 or 4 x srtt[cur] < srtt[them]):  send head on cur
/// ```
#[derive(Debug)]
pub(super) struct RcvBufOpt {
    penalize_all: bool,
    /// Per subflow: when it last penalised another, set when the subflow comes up
    /// (`last_rbuf_opti`, initialised by the module's `init`).
    last: Vec<Option<Time>>,
    /// Every subflow's `last` is set (and stays set, across a subflow's close and return):
    /// `init`, run at every decision, has nothing left to do.
    all_set: bool,
}

impl RcvBufOpt {
    pub(super) fn new(penalize_all: bool) -> RcvBufOpt {
        RcvBufOpt {
            penalize_all,
            last: Vec::new(),
            all_set: false,
        }
    }

    /// Call at the start of every decision. Once every subflow's time is set this is one
    /// test, inline; the rest stays out of line (inlined whole, it was not inlined at all).
    #[inline(always)]
    pub(super) fn init(&mut self, ctx: &SchedCtx) {
        if self.all_set && self.last.len() >= ctx.subflows().len() {
            return;
        }
        self.init_slow(ctx);
    }

    #[inline(never)]
    fn init_slow(&mut self, ctx: &SchedCtx) {
        let n = ctx.subflows().len();
        if self.last.len() < n {
            self.last.resize(n, None);
        }
        for v in ctx.subflows() {
            if v.established && self.last[v.id].is_none() {
                self.last[v.id] = Some(ctx.now);
            }
        }
        self.all_set = self.last.iter().all(Option::is_some);
    }

    pub(super) fn run(&mut self, ctx: &mut SchedCtx, cur: usize) -> Option<Decision> {
        let head = ctx.data_una();
        if head >= ctx.written_end() {
            return None;
        }
        let carried = ctx.sent_on(head);
        if carried.is_empty() {
            return None;
        }
        let me = ctx.subflows()[cur];
        let last = self.last[cur].unwrap_or(Time::ZERO);
        if ctx.now.saturating_since(last) >= me.srtt {
            for slow in carried.iter().filter(|&i| i != cur) {
                let v = ctx.subflows()[slow];
                if me.srtt < v.srtt && v.ca_state == CaState::Open {
                    ctx.penalize(slow);
                    self.last[cur] = Some(ctx.now);
                }
                // The default looks at the first subflow that carried the segment only.
                if !self.penalize_all {
                    break;
                }
            }
        }
        if carried.contains(cur) {
            return None;
        }
        let mut do_retrans = false;
        for v in ctx
            .subflows()
            .iter()
            .filter(|v| v.id != cur && carried.contains(v.id))
        {
            if v.cwnd <= 4 {
                do_retrans = true;
                break;
            }
            if me.srtt * 4 >= v.srtt {
                do_retrans = false;
                break;
            }
            do_retrans = true;
        }
        do_retrans.then_some(Decision {
            dseq: head,
            subflows: SubflowSet::one(cur),
            reason: Reason::Opportunistic,
        })
    }
}

impl Scheduler for DefaultSched {
    fn name(&self) -> &'static str {
        INFO.name
    }

    fn next(&mut self, ctx: &mut SchedCtx) -> Option<Decision> {
        self.rbuf.init(ctx);
        if let Some(d) = next_reinjection(ctx) {
            return Some(d);
        }
        let n = ctx.subflows().len();
        let cur = lowest_rtt_available(ctx.subflows(), SubflowSet::EMPTY)?;
        match ctx.first_unsent() {
            Some(dseq) if ctx.in_window(dseq) => Some(Decision {
                dseq,
                subflows: SubflowSet::one(cur),
                reason: Reason::New,
            }),
            // Blocked by the receive window, or by a full send buffer.
            Some(_) if n > 1 => self.rbuf.run(ctx, cur),
            None if n > 1 && ctx.sndbuf_full() => self.rbuf.run(ctx, cur),
            _ => None,
        }
    }
}

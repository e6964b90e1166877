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

use super::minrtt::next_reinjection;
use super::{lowest_rtt_available, Decision, Reason, SchedCtx, Scheduler, SubflowSet};
use crate::cc::CaState;
use crate::time::Time;

#[derive(Default)]
pub struct DefaultSched {
    /// Per subflow: when it last penalised another (`defsched_priv.last_rbuf_opti`), set when
    /// the subflow is first seen, as `defsched_init` does at subflow creation.
    last_rbuf_opti: Vec<Option<Time>>,
}

impl DefaultSched {
    pub fn new() -> DefaultSched {
        DefaultSched::default()
    }

    fn rcv_buf_optimization(&mut self, ctx: &mut SchedCtx, cur: usize) -> Option<Decision> {
        let head = ctx.data_una();
        if head >= ctx.written_end() {
            return None;
        }
        let carried = ctx.sent_on(head);
        if carried.is_empty() {
            return None;
        }
        let views = ctx.subflows();
        let me = views[cur];
        let last = self.last_rbuf_opti[cur].unwrap_or(Time::ZERO);
        if ctx.now.saturating_since(last) >= me.srtt {
            let slow = views
                .iter()
                .find(|v| v.id != cur && carried.contains(v.id))
                .copied();
            if let Some(slow) = slow {
                if me.srtt < slow.srtt && slow.ca_state == CaState::Open {
                    ctx.penalize(slow.id);
                    self.last_rbuf_opti[cur] = Some(ctx.now);
                }
            }
        }
        if carried.contains(cur) {
            return None;
        }
        // Only worth it if the subflows holding the segment are much slower or nearly stalled.
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
        "default"
    }

    fn next(&mut self, ctx: &mut SchedCtx) -> Option<Decision> {
        let n = ctx.subflows().len();
        if self.last_rbuf_opti.len() < n {
            self.last_rbuf_opti.resize(n, None);
        }
        for v in ctx.subflows() {
            if v.established && self.last_rbuf_opti[v.id].is_none() {
                self.last_rbuf_opti[v.id] = Some(ctx.now);
            }
        }
        if let Some(d) = next_reinjection(ctx) {
            return Some(d);
        }
        let cur = lowest_rtt_available(ctx.subflows(), SubflowSet::EMPTY)?;
        match ctx.first_unsent() {
            Some(dseq) if ctx.in_window(dseq) => Some(Decision {
                dseq,
                subflows: SubflowSet::one(cur),
                reason: Reason::New,
            }),
            // Blocked by the receive window, or by a full send buffer.
            Some(_) if n > 1 => self.rcv_buf_optimization(ctx, cur),
            None if n > 1 && ctx.sndbuf_full() => self.rcv_buf_optimization(ctx, cur),
            _ => None,
        }
    }
}

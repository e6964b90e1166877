//! Redundant scheduling (`redundant`): every data segment goes out on every subflow, so that
//! each one arrives as early as the fastest path allows; capacity is traded for latency.
//!
//! Follows the out-of-tree Linux MPTCP `net/mptcp/mptcp_redundant.c` (Erbshaeusser and
//! Froemmgen, v0.90 onwards). Each subflow keeps its own position in the connection's queue of
//! data not yet Data-ACKed (`redsched_sock_data.skb`), so a subflow that falls behind still
//! carries every segment after the one it sent last. Once the Data ACK passes its position
//! (`redsched_correct_skb_pointers`), the segments in between have reached the peer over
//! another path and it resumes at the oldest one not yet Data-ACKed. Subflows take turns
//! (`redsched_cb_data.next_subflow`), one segment per turn.
//!
//! ```text
//! una <- oldest data segment not yet Data-ACKed
//! for sf in subflows, round robin from the one after the last served:
//!     if sf is a backup: it only carries never-sent data, and only if no regular subflow
//!                        is usable
//!     next[sf] <- max(next[sf], una)   # the Data ACK overtook it: the rest has arrived
//!     skip the segments sf carried already (a reinjection put them there)
//!     if next[sf] is written, inside the receive window and sf has window space:
//!         send next[sf] on sf    (New if no subflow carried it yet, else a Redundant copy)
//!         next[sf] <- next[sf] + 1
//!         return
//! ```
//!
//! The connection's "unsent" bookkeeping only knows whether a segment went out on some
//! subflow; the per-subflow positions above are what make every subflow carry it. Segments
//! queued for reinjection after a subflow's timeout go first, as in the kernel.

use crate::cc::CaState;
use crate::sched::next_reinjection;
use crate::sched::{Decision, Reason, SchedCtx, SchedInfo, Scheduler, SubflowSet};

pub const INFO: SchedInfo = SchedInfo {
    name: "redundant",
    description: "every segment on every subflow with window space; laggards resume at the \
                  oldest segment not yet Data-ACKed",
    source: "Linux out-of-tree mptcp_redundant.c (Erbshaeusser, Froemmgen; v0.90+)",
    params: &[],
    build: |_| Ok(Box::new(Redundant::new())),
};

#[derive(Debug, Default)]
pub struct Redundant {
    /// Per subflow: the next data segment it should carry.
    next: Vec<u64>,
    /// The subflow served last (the turn passes to the one after it).
    last: Option<usize>,
}

impl Redundant {
    pub fn new() -> Redundant {
        Redundant::default()
    }
}

impl Scheduler for Redundant {
    fn name(&self) -> &'static str {
        INFO.name
    }

    fn next(&mut self, ctx: &mut SchedCtx) -> Option<Decision> {
        if let Some(d) = next_reinjection(ctx) {
            return Some(d);
        }
        let views = ctx.subflows();
        let n = views.len();
        if self.next.len() < n {
            self.next.resize(n, 0);
        }
        let (una, end) = (ctx.data_una(), ctx.written_end());
        // `redsched_get_active_valid_sks`: regular subflows that could carry data at all.
        let regular_usable = views
            .iter()
            .any(|v| !v.backup && v.established && v.ca_state != CaState::Loss);
        let start = self.last.map_or(0, |l| l + 1);
        for k in 0..n {
            let i = (start + k) % n;
            let v = &views[i];
            if !v.available() || (v.backup && regular_usable) {
                continue;
            }
            let mut d = self.next[i].max(una);
            while d < end && ctx.sent_on(d).contains(i) {
                d += 1;
            }
            self.next[i] = d;
            if d >= end || !ctx.in_window(d) {
                continue;
            }
            let carried = ctx.sent_on(d);
            // `redsched_use_subflow`: copies only go on regular subflows.
            if v.backup && !carried.is_empty() {
                continue;
            }
            self.next[i] = d + 1;
            self.last = Some(i);
            return Some(Decision {
                dseq: d,
                subflows: SubflowSet::one(i),
                reason: if carried.is_empty() {
                    Reason::New
                } else {
                    Reason::Redundant
                },
            });
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use crate::sched::testkit::*;
    use crate::sched::SchedParams;

    #[test]
    fn every_segment_goes_on_every_subflow() {
        let mut s = sender_with("redundant", &SchedParams::new(), &[10, 100], 1000, None);
        s.start(ms(0));
        let out = drain(&mut s);
        // Initial windows of 10: both subflows carry data segments 0..10, taking turns.
        assert_eq!(on(&out, 0), (0..10).collect::<Vec<_>>());
        assert_eq!(on(&out, 1), (0..10).collect::<Vec<_>>());
        assert_eq!(out[0], (0, 0, 0));
        assert_eq!(out[1], (1, 0, 0));
        // The first copy is new data, the second a redundant copy.
        assert_eq!(s.stats.redundant, 10);
        assert_eq!(s.stats.sched_rejects, 0);
    }

    #[test]
    fn a_lagging_subflow_carries_what_it_missed_then_jumps_to_the_data_ack() {
        let mut s = sender_with("redundant", &SchedParams::new(), &[10, 100], 1000, None);
        s.start(ms(0));
        drain(&mut s);
        // The fast subflow's ten are ACKed (Data ACK 10): its window grows to 20 and it runs
        // ahead with 10..30 alone.
        s.handle_ack(ms(10), &ack(0, 10, 10, 1000));
        let out = drain(&mut s);
        assert_eq!(on(&out, 0), (10..30).collect::<Vec<_>>());
        assert!(on(&out, 1).is_empty());
        // Five ACKed on the slow subflow (window 15, 10 free): it carries the oldest segments
        // it has not carried, 10..20, as copies, not the newest.
        let copies = s.stats.redundant;
        s.handle_ack(ms(100), &ack(1, 5, 10, 1000));
        let out = drain(&mut s);
        assert_eq!(on(&out, 1), (10..20).collect::<Vec<_>>());
        assert_eq!(s.stats.redundant, copies + 10);
        // The Data ACK overtakes it (the fast copies of 15..25 arrived): it resumes at 25.
        s.handle_ack(ms(101), &ack(1, 10, 25, 1000));
        let out = drain(&mut s);
        assert_eq!(&on(&out, 1)[..3], &[25, 26, 27]);
        assert_eq!(s.stats.sched_rejects, 0);
    }

    #[test]
    fn a_closed_receive_window_stops_every_subflow() {
        let mut s = sender_with("redundant", &SchedParams::new(), &[10, 100], 4, None);
        s.start(ms(0));
        let out = drain(&mut s);
        assert_eq!(on(&out, 0), vec![0, 1, 2, 3]);
        assert_eq!(on(&out, 1), vec![0, 1, 2, 3]);
    }
}

//! OTIAS, out-of-order transmission for in-order arrival (Yang, Wang, Amer, "Out-of-order
//! Transmission for In-order Arrival Scheduling for Multipath TCP", sec. II.B-III, Figure 3,
//! eqs. 1-3).
//!
//! Every established subflow may be given a segment, even one whose congestion window is full:
//! each subflow keeps a queue of segments scheduled on it and not yet sent (the paper's
//! "Not_yet_sent", Fig. 2) and sends from its head whenever it has window space. A segment goes
//! to the subflow where it is expected to arrive first:
//!
//! ```text
//! for each segment i, in data order:
//!     candidates <- established subflows, not timed out; for a reinjection, not those that
//!                   already carried it
//!     for each candidate j:
//!         can_send[j]  = cwnd[j] - outstanding[j]                                  (eq. 1)
//!         rtts_wait[j] = max(0, floor((not_yet_sent[j] - can_send[j]) / cwnd[j]))  (eq. 2)
//!         T[j]         = (rtts_wait[j] + 0.5) x srtt[j]                            (eq. 3)
//!     append i to the queue of the first j with the smallest T
//! whenever subflow j has window space: send the head of its queue
//! ```
//!
//! The model's reading of the paper:
//! - When segments are scheduled. Figure 3 runs "each time an MPTCP-PDU is ready to be
//!   scheduled". Here that is whenever the connection may send (some subflow has window
//!   space): segments are taken in data order, within the peer's receive window, and scheduled
//!   one by one until the subflow that can send now has something at the head of its queue. A
//!   bulk sender whose buffer is full writes exactly when ACKs free space, so this is the same
//!   moment; scheduling the whole send buffer ahead at once would instead pin thousands of
//!   segments to the first subflow while the others are still joining (the model opens the
//!   receive window at its full size, a kernel's starts small and grows).
//! - `max(0, .)` in eq. 2: a number of RTTs to wait cannot be negative; a segment that fits in
//!   the free window waits none. Without it a subflow with more free window would rank first
//!   however slow it is.
//! - "Outstanding" is the RFC 6675 pipe, so `can_send` is the window space the sender allows.
//! - Ties go to the first subflow in index order (Figure 3's strict `<`).
//! - A subflow that times out is "potentially failed" in the out-of-tree kernel and its whole
//!   write queue, unsent data included, is reinjected (`mptcp_reinject_data`): its queued
//!   segments are scheduled again on the others, and it takes no new ones while in Loss.
//! - A reinjection (data outstanding on a subflow that timed out) is scheduled like any
//!   segment, but never on a subflow that already carried it (Fig. 3's first loop).
//! - Left out: sec. III also limits each path with a capacity estimate from an earlier paper
//!   (Yang, Amer, Ekiz, ICCN 2013) "to never over-send"; the paper gives no details, so here
//!   each subflow sends what its congestion window allows (docs/experiments/paper003.md).
//!
//! Variants of eq. 2 (REFERENCE.md), parameter `wait`: `paper` (default, above), `kau` (the
//! mptcp-kau kernel port: ceil((not_yet_sent - can_send + 1) / cwnd)), `xquic` (XQUIC, in
//! segments: floor((not_yet_sent - can_send + 1) / cwnd)).

use crate::cc::CaState;
use crate::sched::{
    Decision, ParamError, ParamInfo, Reason, SchedCtx, SchedInfo, SchedParams, Scheduler,
    SubflowSet, SubflowView,
};
use std::collections::{BTreeSet, VecDeque};

pub const INFO: SchedInfo = SchedInfo {
    name: "otias",
    description: "out-of-order transmission for in-order arrival: each segment goes to the \
                  subflow where it would arrive first, queued if that subflow has no window",
    source: "Yang, Wang, Amer, \"Out-of-order Transmission for In-order Arrival Scheduling \
             for Multipath TCP\", Figure 3, eqs. 1-3",
    params: &[ParamInfo {
        key: "wait",
        default: "\"paper\"",
        meaning: "the waiting-time formula: the paper's eq. 2, \"kau\" (the mptcp-kau port) or \
                  \"xquic\"",
    }],
    build: |p| Ok(Box::new(Otias::from_params(p)?)),
};

/// Which expression of eq. 2 counts the RTTs a segment waits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WaitRule {
    Paper,
    Kau,
    Xquic,
}

#[derive(Clone, Copy, Debug)]
struct Queued {
    dseq: u64,
    reinjection: bool,
}

#[derive(Debug)]
pub struct Otias {
    wait: WaitRule,
    /// Per subflow: segments scheduled on it and not yet sent, in scheduling order.
    queues: Vec<VecDeque<Queued>>,
    /// Every data segment below this has been scheduled (or sent).
    next_new: u64,
    /// Never-sent segments taken back from a subflow that timed out, to schedule again.
    returned: BTreeSet<u64>,
    /// Reinjections waiting in some subflow's queue.
    reinjections_queued: BTreeSet<u64>,
    /// Whether each subflow was in Loss at the previous decision.
    in_loss: Vec<bool>,
}

impl Otias {
    pub fn from_params(p: &SchedParams) -> Result<Otias, ParamError> {
        let wait = match p.choice("wait", "paper", &["paper", "kau", "xquic"])? {
            "kau" => WaitRule::Kau,
            "xquic" => WaitRule::Xquic,
            _ => WaitRule::Paper,
        };
        Ok(Otias::new(wait))
    }

    pub fn new(wait: WaitRule) -> Otias {
        Otias {
            wait,
            queues: Vec::new(),
            next_new: 0,
            returned: BTreeSet::new(),
            reinjections_queued: BTreeSet::new(),
            in_loss: Vec::new(),
        }
    }

    /// Eqs. 1-3, in nanoseconds times two (T = (2 x rtts_wait + 1) x srtt / 2, kept exact).
    fn twice_t(&self, v: &SubflowView, not_yet_sent: usize) -> u128 {
        let cwnd = v.cwnd.max(1) as i64;
        let excess = not_yet_sent as i64 - v.cwnd_space as i64; // eq. 1 inside eq. 2
        let rtts_wait = match self.wait {
            WaitRule::Paper => excess.div_euclid(cwnd),
            WaitRule::Kau => (excess + 1 + cwnd - 1).div_euclid(cwnd),
            WaitRule::Xquic => (excess + 1).div_euclid(cwnd),
        }
        .max(0) as u128;
        (2 * rtts_wait + 1) * v.srtt.as_nanos() as u128
    }

    /// Figure 3: the candidate with the smallest T, the first one on ties.
    fn choose(&self, views: &[SubflowView], exclude: SubflowSet) -> Option<usize> {
        let mut best: Option<(u128, usize)> = None;
        for v in views {
            if !v.established || v.ca_state == CaState::Loss || exclude.contains(v.id) {
                continue;
            }
            let t = self.twice_t(v, self.queues[v.id].len());
            if best.is_none_or(|(bt, _)| t < bt) {
                best = Some((t, v.id));
            }
        }
        best.map(|(_, j)| j)
    }

    /// Schedules one more segment; false if there is none to schedule (or nowhere to put it).
    fn schedule_one(&mut self, ctx: &SchedCtx) -> bool {
        let views = ctx.subflows();
        // Reinjections first, as the kernel's reinject queue is served first.
        for dseq in ctx.reinject_queue() {
            if self.reinjections_queued.contains(&dseq) {
                continue;
            }
            if let Some(j) = self.choose(views, ctx.sent_on(dseq)) {
                self.queues[j].push_back(Queued {
                    dseq,
                    reinjection: true,
                });
                self.reinjections_queued.insert(dseq);
                return true;
            }
        }
        // Then new data in order: segments given back by a timed-out subflow, then the next.
        let una = ctx.data_una();
        while let Some(&d) = self.returned.first() {
            if d < una || !ctx.sent_on(d).is_empty() {
                self.returned.pop_first();
                continue;
            }
            let Some(j) = self.choose(views, SubflowSet::EMPTY) else {
                return false;
            };
            self.returned.pop_first();
            self.queues[j].push_back(Queued {
                dseq: d,
                reinjection: false,
            });
            return true;
        }
        let d = self.next_new.max(una);
        if d >= ctx.written_end() || !ctx.in_window(d) {
            return false;
        }
        let Some(j) = self.choose(views, SubflowSet::EMPTY) else {
            return false;
        };
        self.next_new = d + 1;
        if ctx.sent_on(d).is_empty() {
            self.queues[j].push_back(Queued {
                dseq: d,
                reinjection: false,
            });
        }
        true
    }

    /// Among subflows that may send now, the queue head with the lowest data sequence number.
    fn pop_sendable(&mut self, ctx: &SchedCtx) -> Option<Decision> {
        let una = ctx.data_una();
        let mut best: Option<(u64, usize)> = None;
        for v in ctx.subflows().iter().filter(|v| v.available()) {
            let q = &mut self.queues[v.id];
            // Drop what no longer needs this subflow (Data-ACKed meanwhile).
            while let Some(h) = q.front() {
                let stale = h.dseq < una
                    || if h.reinjection {
                        ctx.sent_on(h.dseq).contains(v.id)
                    } else {
                        !ctx.sent_on(h.dseq).is_empty()
                    };
                if !stale {
                    break;
                }
                if h.reinjection {
                    self.reinjections_queued.remove(&h.dseq);
                }
                q.pop_front();
            }
            if let Some(h) = q.front() {
                if best.is_none_or(|(d, _)| h.dseq < d) {
                    best = Some((h.dseq, v.id));
                }
            }
        }
        let (_, j) = best?;
        let h = self.queues[j].pop_front().expect("non-empty queue");
        if h.reinjection {
            self.reinjections_queued.remove(&h.dseq);
        }
        Some(Decision {
            dseq: h.dseq,
            subflows: SubflowSet::one(j),
            reason: if h.reinjection {
                Reason::Reinjection
            } else {
                Reason::New
            },
        })
    }
}

impl Scheduler for Otias {
    fn name(&self) -> &'static str {
        INFO.name
    }

    fn next(&mut self, ctx: &mut SchedCtx) -> Option<Decision> {
        let n = ctx.subflows().len();
        if self.queues.len() < n {
            self.queues.resize_with(n, VecDeque::new);
            self.in_loss.resize(n, false);
        }
        let una = ctx.data_una();
        self.returned = self.returned.split_off(&una);
        self.reinjections_queued = self.reinjections_queued.split_off(&una);
        // A subflow that timed out gives back what it had not sent yet (mptcp_reinject_data),
        // as does one that left (closed, or stale upstream).
        for v in ctx.subflows() {
            let loss = v.ca_state == CaState::Loss || !v.established;
            if loss && !self.in_loss[v.id] {
                for q in self.queues[v.id].drain(..) {
                    if q.reinjection {
                        self.reinjections_queued.remove(&q.dseq);
                    } else {
                        self.returned.insert(q.dseq);
                    }
                }
            }
            self.in_loss[v.id] = loss;
        }
        if !ctx.subflows().iter().any(|v| v.available()) {
            return None;
        }
        // Schedule segments until one is at the head of a queue whose subflow may send. This
        // ends: an available subflow with an empty queue has T = srtt / 2 while every
        // segment scheduled elsewhere raises that subflow's T.
        loop {
            if let Some(d) = self.pop_sendable(ctx) {
                return Some(d);
            }
            if !self.schedule_one(ctx) {
                return None;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::sched::testkit::*;
    use crate::sched::ParamValue;

    /// Two subflows, 10 ms and 100 ms, initial windows of 10: what goes out at the start.
    fn start(wait: &str) -> (crate::conn::Sender, Vec<(u8, u64, u64)>) {
        let mut s = sender(
            "otias",
            Setup {
                params: vec![("wait", ParamValue::Str(wait.into()))],
                ..Setup::default()
            },
        );
        s.start(ms(0));
        let out = drain(&mut s);
        (s, out)
    }

    #[test]
    fn segments_wait_for_the_fast_subflow_until_the_slow_one_would_deliver_first() {
        let (_, out) = start("paper");
        // The fast subflow takes 0..9 at once. Then, its window full, segment 10 + k waits
        // floor(k / 10) RTTs there: T = (floor(k / 10) + 0.5) x 10 ms, below the slow
        // subflow's 50 ms while k < 50. So 10..59 are queued on the fast subflow and the slow
        // one sends 60..69.
        assert_eq!(on(&out, 0), (0..10).collect::<Vec<_>>());
        assert_eq!(on(&out, 1), (60..70).collect::<Vec<_>>());
    }

    #[test]
    fn the_kau_variant_counts_one_more_rtt() {
        // ceil((k + 1) / 10) RTTs: T < 50 ms for k < 40.
        let (_, out) = start("kau");
        assert_eq!(on(&out, 0), (0..10).collect::<Vec<_>>());
        assert_eq!(on(&out, 1), (50..60).collect::<Vec<_>>());
    }

    #[test]
    fn a_subflow_with_window_space_sends_the_head_of_its_queue() {
        let (mut s, _) = start("paper");
        // Two segments ACKed on the fast subflow: Reno in slow start opens the window by 2,
        // so 4 segments go out, the oldest of its queue, not new data.
        s.handle_ack(ms(10), &ack(0, 2, 2, 1000));
        let out = drain(&mut s);
        assert_eq!(on(&out, 0), vec![10, 11, 12, 13]);
        assert!(on(&out, 1).is_empty());
        // The slow subflow: its queue is empty, so segments are scheduled again from 70 on.
        // The fast queue holds 14..59 (46 segments) with a window of 12, all in flight: T =
        // (floor(46 / 12) + 0.5) x 10 = 35 ms, and it stays below the slow subflow's 50 ms
        // until 60 are queued there. So 70..83 join the fast queue and the slow subflow sends
        // 84..87.
        s.handle_ack(ms(100), &ack(1, 2, 2, 1000));
        let out = drain(&mut s);
        let slow = on(&out, 1);
        assert_eq!(slow, vec![84, 85, 86, 87]);
    }

    #[test]
    fn a_reinjection_never_goes_back_on_the_subflow_that_carried_it() {
        // The fast subflow listed second, so that it is not first in index order.
        let mut s = sender(
            "otias",
            Setup {
                rtts_ms: vec![100, 10],
                ..Setup::default()
            },
        );
        s.start(ms(0));
        let out = drain(&mut s);
        assert_eq!(on(&out, 1), (0..10).collect::<Vec<_>>());
        assert_eq!(on(&out, 0), (60..70).collect::<Vec<_>>());
        // The fast subflow probes its tail first (a tail loss probe retransmits 9), then times
        // out: 0..9 are queued for reinjection, and its queue (10..59) is given back.
        let t = s.poll_timeout().unwrap();
        s.handle_timeout(t);
        assert_eq!(drain(&mut s), vec![(1, 9, 9)], "the loss probe");
        let (t, rto_out) = loop {
            // The slow subflow's timers may come between.
            let t = s.poll_timeout().unwrap();
            s.handle_timeout(t);
            let out = drain(&mut s);
            if s.subflows()[1].stats.rtos == 1 {
                break (t, out);
            }
        };
        let rto_out: Vec<_> = rto_out.into_iter().filter(|x| x.0 == 1).collect();
        assert_eq!(rto_out, vec![(1, 0, 0)], "the subflow's own retransmission");
        // Its ACK comes back (all 10 were only delayed): it leaves Loss with window space and
        // is now the best place for anything, but 0..9 must go to the other subflow.
        s.handle_ack(t + crate::time::Dur::from_millis(1), &ack(1, 10, 0, 1000));
        let out = drain(&mut s);
        assert!(!out.is_empty());
        assert!(
            out.iter().all(|&(sf, _, d)| sf == 0 || d >= 10),
            "reinjected on the subflow that carried it: {out:?}"
        );
        // The slow subflow gets window space: it sends the reinjections.
        s.handle_ack(t + crate::time::Dur::from_millis(2), &ack(0, 10, 0, 1000));
        let out = drain(&mut s);
        assert_eq!(&on(&out, 0)[..10], &(0..10).collect::<Vec<_>>()[..]);
        assert_eq!(s.stats.reinjections, 10);
        assert_eq!(s.stats.sched_rejects, 0);
    }

    #[test]
    fn nothing_beyond_the_receive_window_is_scheduled() {
        let mut s = sender(
            "otias",
            Setup {
                rwnd_segments: 30,
                ..Setup::default()
            },
        );
        s.start(ms(0));
        let out = drain(&mut s);
        // 0..9 on the fast subflow, 10..29 queued there (T <= 25 ms < 50 ms), nothing left
        // for the slow one.
        assert_eq!(on(&out, 0), (0..10).collect::<Vec<_>>());
        assert!(on(&out, 1).is_empty());
    }
}

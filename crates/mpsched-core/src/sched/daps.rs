//! DAPS, Delay-Aware Packet Scheduling (`daps`): Kuhn, Lochin, Mifdaoui, Sarwar, Mehani,
//! Boreli, "DAPS: Intelligent Delay-Aware Packet Scheduling For Multipath Transport", IEEE ICC
//! 2014, Algorithm 1; the kernel port `net/mptcp/mptcp_daps.c` in the mptcp-kau fork
//! for what the paper leaves open (delay granularity, smoothed cwnd).
//!
//! The scheduler plans ahead: it hands each subflow the data segments that, sent now, arrive
//! at the receiver when the segments before them arrive over the other subflows. Time is
//! counted in ticks of one-way delay (srtt / 2, rounded to a common granularity); over the
//! hyperperiod, the least common multiple of the delays, every subflow whose delay divides the
//! tick is given its congestion window's worth of the next segments in data order. A slow
//! subflow is thus given segments ahead of the fast one, in proportion to the ratio of their
//! delays.
//!
//! ```text
//! plan (Algorithm 1), over the subflows ready for it, sorted by delay:
//!     D_i <- max(1, round(srtt_i / 2 / granularity));  c_i <- round(smoothed cwnd_i)
//!     H <- lcm(D_1, ..., D_n)
//!     for t in 1..=H:  for each i with t mod D_i == 0:  queue_i += the next c_i segments
//! send: a subflow with window space sends the head of its own queue (the oldest head first)
//! plan the next hyperperiod once every subflow has sent its share, or once the plan's time
//!     is up (each subflow sends a window per round trip: max_i turns_i x srtt_i); a subflow
//!     still holding part of its share then sits that hyperperiod out
//! ```
//!
//! Choices the paper leaves to the implementation, taken from the kernel port: the delay
//! granularity is 4 ms (`round_delay`, parameter `granularity`), and c_i is the 7/8 EWMA of
//! the subflow's cwnd, sampled once per round trip (`mptcp_update_scwnd`, `cwnd_ewma` = 7/8).
//! The plan covers the segments the application has written and the receive window admits,
//! at most one hyperperiod; a segment given to a subflow stays in the connection's unsent
//! data until that subflow sends it, and no other subflow takes it. A subflow that times out
//! gives its queue back: those segments go out first, on the fastest subflow with room (the
//! kernel port skips an unavailable subflow's turn). Reinjections after a timeout go first,
//! as in LowRTT.
//!
//! The plan assumes a subflow sends its window at once when its turn comes. An ACK-clocked
//! subflow spreads its window over a round trip, so the end of a slow subflow's share arrives
//! later than planned: DAPS orders arrivals well when the delays differ a lot and the slow
//! path carries little, less so between paths of similar capacity.

use crate::cc::CaState;
use crate::sched::next_reinjection;
use crate::sched::{
    lowest_rtt_available, Decision, ParamError, ParamInfo, Reason, SchedCtx, SchedInfo,
    SchedParams, Scheduler, SubflowSet,
};
use crate::time::{Dur, Time};
use std::collections::VecDeque;

pub const INFO: SchedInfo = SchedInfo {
    name: "daps",
    description: "delay-aware packet scheduling: plan each subflow's segments over the \
                  hyperperiod of the path delays so that they arrive in order",
    source: "Kuhn et al., ICC 2014, Algorithm 1; kernel port in the mptcp-kau fork",
    params: &[
        ParamInfo {
            key: "granularity",
            default: "\"4ms\"",
            meaning: "one-way delays are rounded to this tick",
        },
        ParamInfo {
            key: "cwnd_ewma",
            default: "0.875",
            meaning: "weight of the old value in the smoothed cwnd",
        },
    ],
    build: |p| Ok(Box::new(Daps::from_params(p)?)),
};

/// One subflow's turns in a hyperperiod.
#[derive(Clone, Debug)]
struct Member {
    sf: usize,
    /// Tick of its next turn.
    next_tick: u64,
    period: u64,
    /// Segments per turn.
    segs: u32,
}

#[derive(Debug)]
pub struct Daps {
    granularity: Dur,
    ewma: f64,
    /// Per subflow: segments planned for it and not yet sent, in data order.
    queue: Vec<VecDeque<u64>>,
    /// The subflows the current hyperperiod was planned for.
    members: SubflowSet,
    /// When the current hyperperiod's windows should all have been sent.
    deadline: Time,
    /// Per subflow: smoothed cwnd and when it was last sampled.
    scwnd: Vec<f64>,
    scwnd_at: Vec<Option<Time>>,
    /// Every never-sent segment below this has been assigned to a subflow.
    planned_end: u64,
    /// Planned segments given back by a subflow that can no longer send, in data order.
    released: VecDeque<u64>,
}

fn gcd(a: u64, b: u64) -> u64 {
    if b == 0 {
        a
    } else {
        gcd(b, a % b)
    }
}

fn lcm(a: u64, b: u64) -> u64 {
    (a / gcd(a, b)).saturating_mul(b)
}

impl Daps {
    pub fn from_params(p: &SchedParams) -> Result<Daps, ParamError> {
        let granularity = p.duration("granularity")?.unwrap_or(Dur::from_millis(4));
        let ewma = p.num("cwnd_ewma", 0.875, 0.0, 0.999)?;
        Ok(Daps {
            granularity,
            ewma,
            queue: Vec::new(),
            members: SubflowSet::EMPTY,
            deadline: Time::ZERO,
            scwnd: Vec::new(),
            scwnd_at: Vec::new(),
            planned_end: 0,
            released: VecDeque::new(),
        })
    }

    /// The subflows a plan may include: up, out of timeout recovery, with an RTT sample.
    fn eligible(ctx: &SchedCtx) -> SubflowSet {
        let mut set = SubflowSet::EMPTY;
        for v in ctx.subflows() {
            if v.established && v.ca_state != CaState::Loss && v.srtt > Dur::ZERO {
                set.insert(v.id);
            }
        }
        set
    }

    /// Samples each subflow's cwnd into its 7/8 average, once per its RTT.
    fn smooth_cwnds(&mut self, ctx: &SchedCtx) {
        for v in ctx.subflows().iter().filter(|v| v.established) {
            let i = v.id;
            match self.scwnd_at[i] {
                None => {
                    self.scwnd[i] = v.cwnd as f64;
                    self.scwnd_at[i] = Some(ctx.now);
                }
                Some(t) if ctx.now.saturating_since(t) >= v.srtt => {
                    self.scwnd[i] = self.ewma * self.scwnd[i] + (1.0 - self.ewma) * v.cwnd as f64;
                    self.scwnd_at[i] = Some(ctx.now);
                }
                Some(_) => {}
            }
        }
    }

    /// The next never-sent segment nobody has been given, if the receive window admits it.
    fn take_unassigned(&mut self, ctx: &SchedCtx) -> Option<u64> {
        let mut d = self.planned_end.max(ctx.data_una());
        while d < ctx.written_end() && !ctx.sent_on(d).is_empty() {
            d += 1;
        }
        self.planned_end = d;
        if d >= ctx.written_end() || !ctx.in_window(d) {
            return None;
        }
        self.planned_end = d + 1;
        Some(d)
    }

    /// Algorithm 1: plans one hyperperiod over `set`, as far as the data and the receive
    /// window go.
    fn plan(&mut self, ctx: &mut SchedCtx, set: SubflowSet) {
        let g = self.granularity.as_nanos().max(1);
        let mut members: Vec<(Dur, Member)> = set
            .iter()
            .map(|i| {
                let v = &ctx.subflows()[i];
                // One-way delay in ticks, rounded to the nearest (kernel `round_delay`).
                let delay = ((v.srtt.as_nanos() / 2 + g / 2) / g).max(1);
                let segs = self.scwnd[i].round().max(1.0) as u32;
                let m = Member {
                    sf: i,
                    next_tick: delay,
                    period: delay,
                    segs,
                };
                (v.srtt, m)
            })
            .collect();
        // Ties within a tick go to the faster subflow.
        members.sort_by_key(|(srtt, m)| (*srtt, m.sf));
        let mut members: Vec<Member> = members.into_iter().map(|(_, m)| m).collect();
        let hyperperiod = members.iter().fold(1, |h, m| lcm(h, m.period));
        self.members = set;
        let mut assigned = 0u64;
        let mut turns = vec![0u64; ctx.subflows().len()];
        'walk: loop {
            let next = members
                .iter()
                .enumerate()
                .filter(|(_, m)| m.next_tick <= hyperperiod)
                .min_by_key(|(k, m)| (m.next_tick, *k))
                .map(|(k, _)| k);
            let Some(k) = next else { break };
            let m = &mut members[k];
            m.next_tick = m.next_tick.saturating_add(m.period);
            let (sf, segs) = (m.sf, m.segs);
            turns[sf] += 1;
            for _ in 0..segs {
                let Some(d) = self.take_unassigned(ctx) else {
                    break 'walk;
                };
                self.queue[sf].push_back(d);
                assigned += 1;
            }
        }
        let span = set
            .iter()
            .map(|i| ctx.subflows()[i].srtt * turns[i])
            .max()
            .unwrap_or(Dur::ZERO);
        self.deadline = ctx.now + span;
        if assigned > 0 {
            ctx.record("daps_hyperperiod_ticks", hyperperiod as f64);
        }
    }

    /// Drops queued segments that were Data-ACKed or sent, and gives back the queues of
    /// subflows that can no longer send.
    fn tidy(&mut self, ctx: &SchedCtx, set: SubflowSet) {
        let una = ctx.data_una();
        for i in 0..self.queue.len() {
            if !set.contains(i) && !self.queue[i].is_empty() {
                let mut merged: Vec<u64> = self.released.drain(..).collect();
                merged.extend(self.queue[i].drain(..));
                merged.sort_unstable();
                self.released = merged.into();
            }
            while self.queue[i]
                .front()
                .is_some_and(|&d| d < una || !ctx.sent_on(d).is_empty())
            {
                self.queue[i].pop_front();
            }
        }
        while self
            .released
            .front()
            .is_some_and(|&d| d < una || !ctx.sent_on(d).is_empty())
        {
            self.released.pop_front();
        }
        self.members = SubflowSet(self.members.0 & set.0);
    }
}

impl Scheduler for Daps {
    fn name(&self) -> &'static str {
        INFO.name
    }

    fn next(&mut self, ctx: &mut SchedCtx) -> Option<Decision> {
        let n = ctx.subflows().len();
        if self.queue.len() < n {
            self.queue.resize(n, VecDeque::new());
            self.scwnd.resize(n, 0.0);
            self.scwnd_at.resize(n, None);
        }
        self.smooth_cwnds(ctx);
        let set = Self::eligible(ctx);
        self.tidy(ctx, set);
        if let Some(d) = next_reinjection(ctx) {
            return Some(d);
        }
        // What a failed subflow was given goes out first, on the fastest subflow with room.
        if let Some(&dseq) = self.released.front() {
            if ctx.in_window(dseq) {
                let sf = lowest_rtt_available(ctx.subflows(), SubflowSet::EMPTY)?;
                self.released.pop_front();
                return Some(Decision {
                    dseq,
                    subflows: SubflowSet::one(sf),
                    reason: Reason::New,
                });
            }
        }
        // The hyperperiod is over once every subflow has sent what it was given, or when it
        // should have: a subflow still sending its share sits the next one out.
        if self.members.iter().all(|i| self.queue[i].is_empty()) || ctx.now >= self.deadline {
            let mut ready = SubflowSet::EMPTY;
            for i in set.iter().filter(|&i| self.queue[i].is_empty()) {
                ready.insert(i);
            }
            if !ready.is_empty() {
                self.plan(ctx, ready);
            }
        }
        // Each subflow with window space sends the head of its own queue; the oldest first.
        let (sf, dseq) = ctx
            .subflows()
            .iter()
            .filter(|v| v.available())
            .filter_map(|v| self.queue[v.id].front().map(|&d| (v.id, d)))
            .filter(|&(_, d)| ctx.in_window(d))
            .min_by_key(|&(_, d)| d)?;
        self.queue[sf].pop_front();
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
    use crate::sched::SchedParams;

    #[test]
    fn the_slow_subflow_is_given_segments_ahead_in_proportion_to_the_delays() {
        // 10 ms and 100 ms: one-way delays 5 ms and 50 ms, 4 ms ticks: D = 1 and 13
        // (round(1.25), round(12.5)); hyperperiod 13. In one hyperperiod the fast subflow
        // has 13 turns of 10 segments, the slow one 1 turn of 10, after the fast one's 13th.
        let mut s = sender_with("daps", &SchedParams::new(), &[10, 100], 1000, None);
        s.start(ms(0));
        let out = drain(&mut s);
        assert_eq!(on(&out, 0), (0..10).collect::<Vec<_>>());
        assert_eq!(on(&out, 1), (130..140).collect::<Vec<_>>());
        assert_eq!(s.stats.sched_rejects, 0);
        // What the fast subflow was given stays its own: after its ACK it carries 10..30,
        // never a segment the slow one holds.
        s.handle_ack(ms(10), &ack(0, 10, 10, 1000));
        let out = drain(&mut s);
        assert_eq!(on(&out, 0), (10..30).collect::<Vec<_>>());
        assert!(on(&out, 1).is_empty());
    }

    #[test]
    fn the_plan_stops_at_the_receive_window() {
        // A 50-segment window: the fast subflow's turns take 0..50; the slow subflow's turn
        // (after segment 130) is not reached, so it sends nothing rather than block.
        let mut s = sender_with("daps", &SchedParams::new(), &[10, 100], 50, None);
        s.start(ms(0));
        let out = drain(&mut s);
        assert_eq!(on(&out, 0), (0..10).collect::<Vec<_>>());
        assert!(on(&out, 1).is_empty());
        // The window opens, but the hyperperiod is not over: the fast subflow sends its share.
        s.handle_ack(ms(10), &ack(0, 10, 10, 1000));
        let out = drain(&mut s);
        assert_eq!(on(&out, 0), (10..30).collect::<Vec<_>>());
        assert!(on(&out, 1).is_empty());
        // Its share sent, a new hyperperiod: 13 fast turns, then the slow subflow's window,
        // which it sends at once.
        s.handle_ack(ms(20), &ack(0, 30, 30, 1000));
        let out = drain(&mut s);
        assert_eq!(&on(&out, 0)[..20], &(30..50).collect::<Vec<_>>()[..]);
        let slow = on(&out, 1);
        assert_eq!(slow.len(), 10);
        assert!(slow[0] >= 50 + 13 * 10, "{slow:?}");
        assert!(slow.windows(2).all(|w| w[1] == w[0] + 1));
        assert_eq!(s.stats.sched_rejects, 0);
    }

    #[test]
    fn a_segment_given_to_one_subflow_is_never_sent_by_another() {
        // 300 ms of ACKs (no Data ACK: the 1,000-segment window stays put): every segment
        // goes out once, on the subflow it was planned for.
        let mut s = sender_with("daps", &SchedParams::new(), &[10, 100], 1000, None);
        s.start(ms(0));
        let mut seen = std::collections::BTreeMap::new();
        for round in 1..=30u64 {
            for (sf, _, d) in drain(&mut s) {
                assert!(seen.insert(d, sf).is_none(), "segment {d} sent twice");
            }
            let fast = s.subflows()[0].snd_nxt();
            s.handle_ack(ms(10 * round), &ack(0, fast, 0, 1000));
            if round % 10 == 0 {
                let slow = s.subflows()[1].snd_nxt();
                s.handle_ack(ms(10 * round), &ack(1, slow, 0, 1000));
            }
        }
        assert_eq!(s.stats.sched_rejects, 0);
        // The slow subflow carried windows far ahead of the fast one's first ones.
        let slow: Vec<u64> = seen
            .iter()
            .filter(|(_, &sf)| sf == 1)
            .map(|(&d, _)| d)
            .collect();
        assert!(slow.len() >= 20 && slow[0] >= 130, "{slow:?}");
    }
}

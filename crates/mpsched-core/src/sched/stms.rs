//! STMS, the Slide Together Multipath Scheduler (Shi et al., "STMS: Improving MPTCP Throughput
//! Under Heterogeneous Networks", USENIX ATC 2018): segments are sent out of order so that
//! they arrive in order. The fast subflow always sends the first never-sent segment; the slow
//! one sends the segment `gap` places further on, leaving the gap for the fast subflow to fill
//! before the slow subflow's segment lands.
//!
//! Algorithm 1 (sec. 3.1; sec. 4 for what "unsent" means):
//!
//! ```text
//! unsent <- never-sent segments, in data order (segments the slow subflow sent ahead skipped)
//! if the fast subflow has window space:  send unsent[0] on it
//! else if the slow one has:              send unsent[gap] on it, if that segment exists and
//!                                        lies in the receive window; otherwise send nothing
//! ```
//!
//! STMS-C (sec. 4) computes the gap each time the slow subflow sends, from eq. 2 with
//! OWD = srtt / 2:
//!
//! ```text
//! gap = B_f x (srtt_s - srtt_f) / 2                                                  (eq. 2)
//! ```
//!
//! Eq. 2 with OWD = srtt / 2 assumes the queueing delay splits evenly between the two
//! directions, but a bulk download queues only on the forward path: a slow path whose queue
//! grows by Q delays its segments by Q and the estimate by Q / 2, so the gap falls short by
//! B_f x Q / 2. The parameter `owd = "forward-queue"` (not in the paper; default `"half-rtt"`,
//! the paper) charges the whole queueing delay to the forward path:
//! OWD = min_rtt / 2 + (srtt - min_rtt).
//!
//! B_f is "the bandwidth of the fast path": the bottleneck bandwidth, estimated as Linux
//! estimates it (BBR's `bbr_bw`), the largest delivery-rate sample (`tcp_rate.c`) of the last
//! 10 round trips (here 10 x srtt). Not the delivery rate itself: when the gap is too small
//! the fast subflow idles behind held-back ACKs, its delivery rate drops, the gap shrinks with
//! it and the fast subflow starves further (with a 30 KB buffer on the fast path and
//! RTT_s = 200 ms that loop halved the fast subflow's goodput); a maximum keeps what the
//! path can carry.
//! Before the first sample: cwnd x MSS / srtt.
//!
//! STMS-A (Algorithm 2) adjusts the gap from the Data ACKs instead:
//!
//! ```text
//! on each Data ACK acknowledging `acked` segments:
//!     delta <- 0
//!     if acked > 2:
//!         delta <- +acked if the old left edge went out on the slow subflow (it arrived late:
//!                  widen the gap), -acked if on the fast one (the slow one is early)
//!     ewma <- ewma + (delta - ewma) / n      n = the Data ACKs of the last adjust_interval
//!     once per adjust_interval: gap <- max(0, gap + ewma)
//! ```
//!
//! `adjust_interval` defaults to (srtt_s + srtt_f) / 2, the paper's setting (sec. 5). The
//! paper averages delta "over adjust_interval" and leaves the EWMA's gain open; a gain of
//! 1 / n gives the average a memory of one interval, however many Data ACKs it brings (8, TCP's
//! srtt gain, before the first interval ends). A gain fixed per Data ACK would not: at 1/8 the
//! average forgets a jump within ~8 Data ACKs (a few ms at 50 Mbit/s), so what the gap takes
//! once per interval is whatever happened in its last few milliseconds. When the jumps are
//! sparse (a gap too large by ~500 segments brought one Data ACK in ten a jump of ~-20) that
//! sample is nearly always 0, and the gap came down by ~1 segment a second instead of ~18.
//! A Data ACK of at most 2 segments is in-order progress (RFC 1122's ACK every other segment)
//! and counts as delta = 0, so the average measures how much of the recent progress came in
//! jumps, and which way. The gap starts at 0: STMS-A relies on the feedback, not on path
//! estimates (sec. 3.1).
//!
//! Algorithm 2 reads every jump as a gap error, including the jump that ends a subflow's loss
//! recovery: a segment lost on the slow subflow stalls the stream for about RTT_s and its
//! retransmission then releases hundreds of segments at once, with the left edge on the slow
//! subflow. Such jumps push the gap up far more than the fast subflow's (shorter) recoveries
//! pull it down. The parameter `recovery_jumps = "skip"` (not in the paper; default `"count"`,
//! the paper) ignores Data ACKs that arrive while any subflow is in fast recovery or after a
//! timeout.
//!
//! While the subflows interleave segment by segment (two paths of equal rate: the slow one
//! takes every other segment past the gap) a Data ACK moves by ~4 (a fast-subflow ACK's 2
//! segments and the slow ones between them) whatever the gap's error: the sign of delta
//! tells which way the gap is wrong, its size does not tell how far. The average delta, and
//! so the gap's step per adjust_interval, is then at most ~4 however large the error
//! (docs/experiments/paper000.md).
//!
//! Fallback (sec. 3.2, eq. 4): the slow subflow is used only if the host buffer (the smaller of
//! the send buffer and the largest receive window seen) holds
//!
//! ```text
//! Buf(fallback) = RTT_f x B_f + gap   (the fast subflow's window, cwnd_f, plus the gap)
//! ```
//!
//! below that STMS is single-path TCP on the fast subflow. (The "unsent[gap] must lie in the
//! window" rule of Algorithm 1 enforces nearly the same limit by itself.)
//!
//! More than two subflows (the paper has two): subflows are ranked by srtt. The fastest sends
//! unsent[0]; subflow j sends unsent[gap_j], where gap_j counts what every faster subflow k
//! delivers while j's segment is in flight:
//!
//! ```text
//! gap_j = sum over k faster than j of B_k x (srtt_j - srtt_k) / 2        (STMS-C)
//! ```
//!
//! When several subflows have window space the fastest goes first. STMS-A keeps one gap per
//! subflow: a Data ACK whose left edge went out on slower subflow j widens gap_j; one whose left
//! edge went out on the fastest narrows every gap. Eq. 4 becomes: subflow j is used if the
//! host buffer holds the windows of the faster subflows plus gap_j. With two subflows all of
//! this is exactly Algorithms 1 and 2.
//!
//! The gap in use is recorded as "gap" (segments) for the second-fastest subflow, and as
//! "gap.sfK" for each slower subflow K < 8 when there are more than two.
//!
//! Reinjections after a timeout go first, on the fastest available subflow that has not
//! carried them (as LowRTT's), which the paper does not change. Backup subflows rank after
//! regular ones.

use crate::cc::CaState;
use crate::sched::next_reinjection;
use crate::sched::{
    Decision, ParamError, ParamInfo, Reason, SchedCtx, SchedInfo, SchedParams, Scheduler,
    SubflowSet, SubflowView,
};
use crate::time::{Dur, Time};
use crate::units::wire::MSS;
use std::collections::VecDeque;

pub const INFO_C: SchedInfo = SchedInfo {
    name: "stms-c",
    description: "STMS with the gap calculated: the fast subflow sends the first unsent \
                  segment, the slow one the gap-th, gap = B_f x (OWD_s - OWD_f)",
    source: "Shi et al., \"STMS\", USENIX ATC 2018, Algorithm 1, eqs. 2 and 4, sec. 4",
    params: &[ParamInfo {
        key: "owd",
        default: "\"half-rtt\"",
        meaning: "one-way delay as srtt / 2 (the paper), or \"forward-queue\": min_rtt / 2 + \
                  (srtt - min_rtt)",
    }],
    build: |p| Ok(Box::new(Stms::calculated(p)?)),
};

pub const INFO_A: SchedInfo = SchedInfo {
    name: "stms-a",
    description: "STMS with the gap adjusted from the Data ACKs (who held the left edge, how \
                  many segments each Data ACK released)",
    source: "Shi et al., \"STMS\", USENIX ATC 2018, Algorithms 1 and 2, eq. 4",
    params: &[
        ParamInfo {
            key: "adjust_interval",
            default: "(srtt_s + srtt_f) / 2",
            meaning: "how often the gap moves (Algorithm 2)",
        },
        ParamInfo {
            key: "recovery_jumps",
            default: "\"count\"",
            meaning: "\"skip\" ignores the Data ACK jumps of loss recoveries (not in the paper)",
        },
    ],
    build: |p| Ok(Box::new(Stms::adjusted(p)?)),
};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StmsVariant {
    /// STMS-C: gap from eq. 2, with one-way delays estimated as `owd` says.
    Calculated { owd: OwdEstimate },
    /// STMS-A: gap from Algorithm 2; `interval` `None` = (srtt_s + srtt_f) / 2;
    /// `skip_recovery`: ignore Data ACKs while a subflow recovers from a loss.
    Adjusted {
        interval: Option<Dur>,
        skip_recovery: bool,
    },
}

/// How STMS-C turns a subflow's RTT into its one-way delay.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OwdEstimate {
    /// srtt / 2: symmetric paths (sec. 4, the paper).
    HalfRtt,
    /// min_rtt / 2 + (srtt - min_rtt): the queueing delay is all on the forward path.
    ForwardQueue,
}

impl OwdEstimate {
    fn of(self, v: &SubflowView) -> f64 {
        let srtt = v.srtt.as_secs_f64();
        match self {
            OwdEstimate::ForwardQueue if v.min_rtt > Dur::ZERO => {
                srtt - v.min_rtt.as_secs_f64() / 2.0
            }
            _ => srtt / 2.0,
        }
    }
}

/// BBR's bandwidth-filter length (`bbr_bw_rtts`).
const BW_WINDOW_ROUNDS: u64 = 10;

/// The largest sample of a sliding time window: samples that can no longer be the maximum
/// (older and not larger than a newer one) are dropped at once, so the queue stays short.
#[derive(Clone, Debug, Default)]
struct MaxFilter {
    samples: VecDeque<(Time, u64)>,
}

impl MaxFilter {
    fn update(&mut self, now: Time, value: u64, window: Dur) {
        while self.samples.back().is_some_and(|&(_, v)| v <= value) {
            self.samples.pop_back();
        }
        self.samples.push_back((now, value));
        while self.samples.front().is_some_and(|&(t, _)| t + window < now) {
            self.samples.pop_front();
        }
    }

    fn max(&self) -> u64 {
        self.samples.front().map_or(0, |&(_, v)| v)
    }
}

const PER_SUBFLOW_KEYS: [&str; 8] = [
    "gap.sf0", "gap.sf1", "gap.sf2", "gap.sf3", "gap.sf4", "gap.sf5", "gap.sf6", "gap.sf7",
];

#[derive(Clone, Debug, Default)]
struct PerSubflow {
    /// The gap in segments (STMS-A: adjusted, fractional; STMS-C: last computed).
    gap: f64,
    /// STMS-A: smoothed delta.
    ewma: f64,
    next_adjust: Option<Time>,
    /// STMS-A: Data ACKs in the last complete adjust_interval, and so far in this one.
    acks_per_interval: u64,
    acks: u64,
    /// Delivery-rate samples (bits per second) of the last 10 round trips.
    bw: MaxFilter,
    last_sample: u64,
    srtt: Dur,
    /// The integer gap last recorded under this subflow's own key.
    recorded: Option<u64>,
}

#[derive(Debug)]
pub struct Stms {
    variant: StmsVariant,
    sf: Vec<PerSubflow>,
    /// Established subflows by rank at the last decision (fastest first).
    order: Vec<usize>,
    max_window: u64,
    /// The value last recorded as "gap".
    recorded_gap: Option<u64>,
    /// Whether a subflow was in loss recovery at the last decision.
    recovering: bool,
}

impl Stms {
    pub fn calculated(p: &SchedParams) -> Result<Stms, ParamError> {
        let owd = match p.choice("owd", "half-rtt", &["half-rtt", "forward-queue"])? {
            "forward-queue" => OwdEstimate::ForwardQueue,
            _ => OwdEstimate::HalfRtt,
        };
        Ok(Stms::new(StmsVariant::Calculated { owd }))
    }

    pub fn adjusted(p: &SchedParams) -> Result<Stms, ParamError> {
        let interval = p.duration("adjust_interval")?;
        let skip_recovery = p.choice("recovery_jumps", "count", &["count", "skip"])? == "skip";
        Ok(Stms::new(StmsVariant::Adjusted {
            interval,
            skip_recovery,
        }))
    }

    pub fn new(variant: StmsVariant) -> Stms {
        Stms {
            variant,
            sf: Vec::new(),
            order: Vec::new(),
            max_window: 0,
            recorded_gap: None,
            recovering: false,
        }
    }

    /// Feeds new delivery-rate samples into each subflow's bandwidth filter.
    fn update_rates(&mut self, now: Time, views: &[SubflowView]) {
        for v in views {
            let s = &mut self.sf[v.id];
            s.srtt = v.srtt;
            let sample = v.delivery_rate_bps();
            if sample > 0 && sample != s.last_sample {
                s.last_sample = sample;
                s.bw.update(now, sample, v.srtt * BW_WINDOW_ROUNDS);
            }
        }
    }

    /// B_k in segments per second. Delivery rates count packets of `wire::MSS` bytes, as
    /// Linux's do (`tcp_rate.c` scales by `mss_cache`), so this is packets per second.
    fn segments_per_sec(&self, v: &SubflowView) -> f64 {
        let bps = match self.sf[v.id].bw.max() {
            r if r > 0 => r as f64,
            _ if v.srtt > Dur::ZERO => v.cwnd as f64 * MSS as f64 * 8.0 / v.srtt.as_secs_f64(),
            _ => 0.0,
        };
        bps / (8.0 * MSS as f64)
    }

    /// The gap of the subflow ranked `rank` (>= 1), in segments.
    fn gap(&mut self, views: &[SubflowView], rank: usize) -> u64 {
        let j = self.order[rank];
        if let StmsVariant::Calculated { owd } = self.variant {
            // eq. 2, summed over the faster subflows.
            let owd_j = owd.of(&views[j]);
            let gap: f64 = self.order[..rank]
                .iter()
                .map(|&k| {
                    let owd_k = owd.of(&views[k]);
                    self.segments_per_sec(&views[k]) * (owd_j - owd_k).max(0.0)
                })
                .sum();
            self.sf[j].gap = gap;
        }
        self.sf[j].gap.round().max(0.0) as u64
    }

    fn record(&mut self, ctx: &mut SchedCtx, rank: usize, gap: u64) {
        let j = self.order[rank];
        if rank == 1 && self.recorded_gap != Some(gap) {
            self.recorded_gap = Some(gap);
            ctx.record("gap", gap as f64);
        }
        let s = &mut self.sf[j];
        if self.order.len() > 2 && j < PER_SUBFLOW_KEYS.len() && s.recorded != Some(gap) {
            s.recorded = Some(gap);
            ctx.record(PER_SUBFLOW_KEYS[j], gap as f64);
        }
    }

    /// Eq. 4 for the subflow ranked `rank`: the host buffer holds the faster subflows' windows
    /// plus the gap.
    fn buffer_allows(&self, ctx: &SchedCtx, rank: usize, gap: u64, host_buf: u64) -> bool {
        let views = ctx.subflows();
        let faster: u64 = self.order[..rank]
            .iter()
            .map(|&k| views[k].cwnd as u64)
            .sum();
        (faster + gap) * ctx.mss() as u64 <= host_buf
    }
}

impl Scheduler for Stms {
    fn name(&self) -> &'static str {
        match self.variant {
            StmsVariant::Calculated { .. } => INFO_C.name,
            StmsVariant::Adjusted { .. } => INFO_A.name,
        }
    }

    fn next(&mut self, ctx: &mut SchedCtx) -> Option<Decision> {
        let views = ctx.subflows();
        if self.sf.len() < views.len() {
            self.sf.resize(views.len(), PerSubflow::default());
        }
        self.update_rates(ctx.now, views);
        self.recovering = views.iter().any(|v| v.ca_state != CaState::Open);
        self.max_window = self.max_window.max(ctx.window_bytes());
        self.order.clear();
        // A subflow recovering from a timeout is no candidate at all (the out-of-tree kernel
        // STMS was built on marks it potentially failed, `tp->pf`): the fastest subflow that
        // works is "the fast one", so a dead fast path is not left a gap it never fills.
        self.order.extend(
            views
                .iter()
                .filter(|v| v.established && v.ca_state != CaState::Loss)
                .map(|v| v.id),
        );
        self.order
            .sort_by_key(|&i| (views[i].backup, views[i].srtt, i));

        if let Some(d) = next_reinjection(ctx) {
            return Some(d);
        }
        if let StmsVariant::Adjusted { .. } = self.variant {
            // Algorithm 2 moves the gaps between decisions: record them as soon as possible.
            for rank in 1..self.order.len() {
                let gap = self.gap(ctx.subflows(), rank);
                self.record(ctx, rank, gap);
            }
        }
        let host_buf = ctx.sndbuf_bytes().min(self.max_window);
        for rank in 0..self.order.len() {
            let j = self.order[rank];
            if !ctx.subflows()[j].available() {
                continue;
            }
            if rank == 0 {
                // Algorithm 1 line 3: the fast subflow sends unsent[0].
                let dseq = ctx.first_unsent()?;
                return ctx.in_window(dseq).then_some(Decision {
                    dseq,
                    subflows: SubflowSet::one(j),
                    reason: Reason::New,
                });
            }
            // Line 5: a slower subflow sends unsent[gap].
            let gap = self.gap(ctx.subflows(), rank);
            self.record(ctx, rank, gap);
            if !self.buffer_allows(ctx, rank, gap, host_buf) {
                continue;
            }
            match ctx.unsent().nth(gap as usize) {
                Some(dseq) if ctx.in_window(dseq) => {
                    return Some(Decision {
                        dseq,
                        subflows: SubflowSet::one(j),
                        reason: Reason::New,
                    })
                }
                // Beyond the window or the written data: skip this round (sec. 4).
                _ => continue,
            }
        }
        None
    }

    fn on_data_ack(&mut self, now: Time, acked: u64, left_edge: SubflowSet) {
        let StmsVariant::Adjusted {
            interval,
            skip_recovery,
        } = self.variant
        else {
            return;
        };
        let Some(&fast) = self.order.first() else {
            return;
        };
        let fast_srtt = self.sf[fast].srtt;
        for &j in &self.order[1..] {
            let s = &mut self.sf[j];
            let mut delta = 0.0;
            if acked > 2 && !(skip_recovery && self.recovering) {
                if left_edge.contains(fast) {
                    delta = -(acked as f64);
                } else if left_edge.contains(j) {
                    delta = acked as f64;
                }
            }
            let every = interval.unwrap_or((s.srtt + fast_srtt) / 2);
            // "EWMA of delta_gap over adjust_interval": the average remembers as many Data
            // ACKs as the last interval brought (TCP's 8 before the first interval ends).
            let memory = match s.acks_per_interval {
                0 => 8,
                n => n,
            };
            s.ewma += (delta - s.ewma) / memory as f64;
            s.acks += 1;
            match s.next_adjust {
                None => s.next_adjust = Some(now + every),
                Some(t) if now >= t => {
                    s.gap = (s.gap + s.ewma).max(0.0);
                    s.next_adjust = Some(now + every);
                    s.acks_per_interval = s.acks;
                    s.acks = 0;
                }
                Some(_) => {}
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{PerSubflow, Stms, StmsVariant};
    use crate::conn::Sender;
    use crate::sched::testkit::*;
    use crate::sched::{Scheduler, SubflowSet};
    use crate::time::Dur;

    /// The gap values recorded so far.
    fn gaps(s: &mut Sender) -> Vec<f64> {
        s.take_sched_samples()
            .into_iter()
            .filter(|x| x.key == "gap")
            .map(|x| x.value)
            .collect()
    }

    #[test]
    fn the_fast_subflow_sends_in_order_and_the_slow_one_beyond_the_gap() {
        // No delivery-rate sample yet: B_f = cwnd x MSS / srtt = 10 segments / 10 ms, and
        // gap = 1000/s x (100 - 10) ms / 2 = 45.
        let mut s = sender("stms-c", Setup::default());
        s.start(ms(0));
        let out = drain(&mut s);
        assert_eq!(on(&out, 0), (0..10).collect::<Vec<_>>());
        assert_eq!(on(&out, 1), (55..65).collect::<Vec<_>>());
        assert_eq!(gaps(&mut s), vec![45.0]);
        // The fast subflow fills the gap in order, skipping nothing it should not.
        s.handle_ack(ms(10), &ack(0, 10, 10, 1000));
        let out = drain(&mut s);
        assert_eq!(on(&out, 0), (10..30).collect::<Vec<_>>());
        assert_eq!(s.stats.sched_rejects, 0);
    }

    #[test]
    fn with_three_subflows_each_gap_counts_every_faster_subflow() {
        // 10, 30 and 100 ms, windows of 10: B = 1000 and 333 segments/s for the two faster.
        // gap(30 ms) = 1000 x 10 ms = 10; gap(100 ms) = 1000 x 45 ms + 333 x 35 ms = 56.7.
        let mut s = sender(
            "stms-c",
            Setup {
                rtts_ms: vec![100, 10, 30],
                ..Setup::default()
            },
        );
        s.start(ms(0));
        let out = drain(&mut s);
        assert_eq!(on(&out, 1), (0..10).collect::<Vec<_>>());
        // unsent[10] once 0..9 are out: 20 onwards.
        assert_eq!(on(&out, 2), (20..30).collect::<Vec<_>>());
        // unsent[57]: 10..19 and then 30 + 47 = 77 onwards.
        assert_eq!(on(&out, 0), (77..87).collect::<Vec<_>>());
        let samples = s.take_sched_samples();
        let value = |key: &str| samples.iter().find(|x| x.key == key).map(|x| x.value);
        assert_eq!(value("gap"), Some(10.0));
        assert_eq!(value("gap.sf2"), Some(10.0));
        assert_eq!(value("gap.sf0"), Some(57.0));
    }

    #[test]
    fn the_slow_subflow_skips_what_it_sent_already() {
        let mut s = sender("stms-c", Setup::default());
        s.start(ms(0));
        drain(&mut s);
        // The slow subflow's ACK frees 2 + 2 (slow start): unsent[45] is now past 65, since
        // 55..64 are sent and no longer count.
        s.handle_ack(ms(100), &ack(1, 2, 0, 1000));
        let out = drain(&mut s);
        let slow = on(&out, 1);
        assert_eq!(slow.len(), 4);
        assert!(slow[0] >= 65, "{slow:?}");
    }

    #[test]
    fn a_host_buffer_below_buf_fallback_leaves_the_slow_subflow_idle() {
        // Eq. 4: cwnd_f + gap = 10 + 45 segments > a 40-segment receive window.
        let mut s = sender(
            "stms-c",
            Setup {
                rwnd_segments: 40,
                ..Setup::default()
            },
        );
        s.start(ms(0));
        let out = drain(&mut s);
        assert_eq!(on(&out, 0), (0..10).collect::<Vec<_>>());
        assert!(on(&out, 1).is_empty());
        // minrtt, for contrast, would use the slow subflow at once.
        let mut m = sender(
            "minrtt",
            Setup {
                rwnd_segments: 40,
                ..Setup::default()
            },
        );
        m.start(ms(0));
        assert_eq!(on(&drain(&mut m), 1).len(), 10);
    }

    #[test]
    fn stms_a_starts_with_no_gap() {
        let mut s = sender("stms-a", Setup::default());
        s.start(ms(0));
        let out = drain(&mut s);
        assert_eq!(on(&out, 0), (0..10).collect::<Vec<_>>());
        assert_eq!(on(&out, 1), (10..20).collect::<Vec<_>>());
        assert_eq!(gaps(&mut s), vec![0.0]);
    }

    /// An STMS-A scheduler as `next` leaves it with a 10 ms and a 100 ms subflow.
    fn adjusting(interval: Option<Dur>) -> Stms {
        adjusting_with(interval, false)
    }

    fn adjusting_with(interval: Option<Dur>, skip_recovery: bool) -> Stms {
        let mut st = Stms::new(StmsVariant::Adjusted {
            interval,
            skip_recovery,
        });
        st.order = vec![0, 1];
        st.sf = vec![PerSubflow::default(); 2];
        st.sf[0].srtt = Dur::from_millis(10);
        st.sf[1].srtt = Dur::from_millis(100);
        st
    }

    #[test]
    fn algorithm_2_moves_the_gap_by_the_average_jump_once_per_interval() {
        let (fast, slow) = (SubflowSet::one(0), SubflowSet::one(1));
        let mut st = adjusting(None);
        // The first Data ACK starts the clock: adjust_interval = (100 + 10) / 2 = 55 ms.
        st.on_data_ack(ms(0), 2, fast);
        // A jump of 40 with the left edge on the slow subflow: delta = +40, ewma = 5; no
        // change before the interval is over.
        st.on_data_ack(ms(10), 40, slow);
        assert_eq!(st.sf[1].gap, 0.0);
        assert_eq!(st.sf[1].ewma, 5.0);
        // In-order progress (<= 2 segments) counts as delta = 0 and decays the average; at
        // 55 ms the gap takes it.
        st.on_data_ack(ms(55), 2, slow);
        assert_eq!(st.sf[1].ewma, 5.0 * 7.0 / 8.0);
        assert_eq!(st.sf[1].gap, 5.0 * 7.0 / 8.0);
        // A jump with the left edge on the fast subflow pulls the other way; the gap never
        // goes below 0.
        for k in 0..8 {
            st.on_data_ack(ms(60 + 60 * k), 100, fast);
        }
        assert!(st.sf[1].ewma < -50.0);
        assert_eq!(st.sf[1].gap, 0.0);
    }

    /// The gap after ten 100 ms intervals of in-order Data ACKs (one per ms) with one jump of
    /// 40 segments (left edge on the slow subflow) at `jump_ms`.
    fn gap_after_one_jump(jump_ms: u64) -> f64 {
        let (fast, slow) = (SubflowSet::one(0), SubflowSet::one(1));
        let mut st = adjusting(Some(Dur::from_millis(100)));
        for t in 0..=1000 {
            match t == jump_ms {
                true => st.on_data_ack(ms(t), 40, slow),
                false => st.on_data_ack(ms(t), 2, fast),
            }
        }
        st.sf[1].gap
    }

    #[test]
    fn the_average_remembers_a_whole_interval_of_data_acks() {
        // The interval ends at 200 ms. A jump 95 ms before it counts, decayed by
        // (1 - 1/100)^95 ~ 1/e, instead of (7/8)^95 ~ 3e-6 with a gain of 1/8 per Data ACK.
        let early = gap_after_one_jump(105);
        let late = gap_after_one_jump(195);
        assert!(late > 0.5 && late < 40.0, "{late}");
        assert!(early > late / 3.0, "early {early}, late {late}");
    }

    #[test]
    fn adjust_interval_is_a_parameter() {
        let slow = SubflowSet::one(1);
        let mut st = adjusting(Some(Dur::from_millis(500)));
        st.on_data_ack(ms(0), 2, slow);
        st.on_data_ack(ms(100), 80, slow);
        st.on_data_ack(ms(499), 80, slow);
        assert_eq!(st.sf[1].gap, 0.0);
        st.on_data_ack(ms(500), 80, slow);
        assert!(st.sf[1].gap > 20.0);
        let bad = crate::sched::build(
            "stms-a",
            &crate::sched::SchedParams::new().with(
                "adjust_interval",
                crate::sched::ParamValue::Str("-1s".into()),
            ),
        );
        assert_eq!(
            bad.err().unwrap().to_string(),
            "adjust_interval: not a positive duration: '-1s'"
        );
    }

    #[test]
    fn recovery_jumps_can_be_skipped() {
        let slow = SubflowSet::one(1);
        for (skip, moved) in [(false, true), (true, false)] {
            let mut st = adjusting_with(None, skip);
            st.recovering = true;
            st.on_data_ack(ms(0), 2, slow);
            st.on_data_ack(ms(10), 400, slow);
            st.on_data_ack(ms(60), 2, slow);
            assert_eq!(st.sf[1].gap > 0.0, moved, "skip = {skip}");
        }
        let p = crate::sched::SchedParams::new().with(
            "recovery_jumps",
            crate::sched::ParamValue::Str("sometimes".into()),
        );
        let err = crate::sched::build("stms-a", &p).err().unwrap().to_string();
        assert!(err.starts_with("recovery_jumps: "), "{err}");
    }

    /// The gap the slow subflow uses after its first segments come back 300 ms after they
    /// left, on a 100 ms path: srtt_s = 100 + (300 - 100) / 8 = 125 ms, min_rtt_s = 100 ms.
    fn gap_behind_a_slow_path_queue(owd: &str) -> Vec<f64> {
        let mut s = sender(
            "stms-c",
            Setup {
                params: vec![("owd", crate::sched::ParamValue::Str(owd.into()))],
                ..Setup::default()
            },
        );
        s.start(ms(0));
        drain(&mut s);
        gaps(&mut s);
        s.handle_ack(ms(300), &ack(1, 2, 0, 1000));
        drain(&mut s);
        gaps(&mut s)
    }

    #[test]
    fn forward_queue_owd_charges_the_whole_queueing_delay_to_the_forward_path() {
        // B_f = 10 segments / 10 ms (no rate sample yet). Half-RTT (the paper):
        // 1000/s x (125 - 10) ms / 2 = 57.5. Forward queue: OWD_s = 125 - 100 / 2 = 75 ms,
        // OWD_f = 10 - 10 / 2 = 5 ms, 1000/s x 70 ms = 70.
        assert_eq!(gap_behind_a_slow_path_queue("half-rtt"), vec![58.0]);
        assert_eq!(gap_behind_a_slow_path_queue("forward-queue"), vec![70.0]);
        let p = crate::sched::SchedParams::new()
            .with("owd", crate::sched::ParamValue::Str("one-way".into()));
        let err = crate::sched::build("stms-c", &p).err().unwrap().to_string();
        assert!(err.starts_with("owd: "), "{err}");
    }

    #[test]
    fn the_bandwidth_filter_keeps_the_largest_sample_of_its_window() {
        let mut f = super::MaxFilter::default();
        let w = Dur::from_millis(100);
        f.update(ms(0), 30, w);
        f.update(ms(10), 10, w);
        assert_eq!(f.max(), 30);
        f.update(ms(50), 20, w);
        assert_eq!(f.max(), 30);
        // 30 leaves the window; 20 is the largest left, 10 was dropped when 20 came.
        f.update(ms(105), 5, w);
        assert_eq!(f.max(), 20);
        assert_eq!(f.samples.len(), 2);
        f.update(ms(200), 40, w);
        assert_eq!(f.max(), 40);
        assert_eq!(f.samples.len(), 1);
    }
}

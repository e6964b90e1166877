//! OLIA, the Opportunistic Linked Increases Algorithm (Khalili, Gast, Popovic, Le Boudec,
//! "MPTCP is not Pareto-optimal: performance issues and a possible solution", CoNEXT 2012;
//! IETF draft-khalili-mptcp-congestion-control-05), as the out-of-tree Linux MPTCP
//! implementation runs it (`net/mptcp/mptcp_olia.c`).
//!
//! Per path r (draft section 3): l1_r is the data ACKed between the last two losses on r, l2_r
//! the data ACKed since the last loss, l_r = max(l1_r, l2_r). B, the presumed best paths,
//! maximise l_r / rtt_r^2 (a Reno path's rate is ~ sqrt(2 l_r) / rtt_r, so this ranks paths by
//! the rate TCP would get on them); M are the paths with the largest window. Then
//! - alpha_r = 1 / (|R| |B \ M|) for r in B \ M (best paths without the largest window),
//! - alpha_r = -1 / (|R| |M|) for r in M, if B \ M is not empty,
//! - alpha_r = 0 otherwise,
//!
//! and each ACK on r in congestion avoidance grows w_r by
//! (w_r / rtt_r^2) / (sum_p w_p / rtt_p)^2 + alpha_r / w_r per ACKed segment; a loss halves
//! w_r. Slow start is TCP's.
//!
//! As in Linux, the fractional growth accumulates in a signed counter of 2^-10 segments, with
//! Linux's fixed point, its +-1023 thresholds, and the window of a subflow in fast recovery
//! counted as its ssthresh. Deviations, each for the model's coherence: the increment is
//! applied once per ACKed segment (Linux once per ACK; RFC 3465 and the paper count data);
//! slow start carries the segments left over at ssthresh into congestion avoidance, as Reno;
//! and while a single subflow can send, the increase is Reno's exactly, which is what the
//! formula reduces to (1 / w per segment) before Linux's rounding (which there costs about one
//! ACK per window at small windows).
//!
//! A consequence of Linux's structure, kept: slow start is tested first, so a window that a
//! negative alpha_r has brought below ssthresh slow-starts back to it on the next ACK; alpha_r
//! only moves window above ssthresh.

use super::lia::{can_send, srtt_us8, subflows};
use super::{AckSample, CaState, CcInfo, CcState, CongestionControl};
use crate::time::Time;

/// Linux `scale = 10`: the increase is counted in 2^-10 segments, and scales the window in
/// the fixed-point formula.
const SCALE: u32 = 10;
/// One segment, less one unit of rounding: Linux's `(1 << scale) - 1` threshold.
const ONE_SEGMENT: i64 = (1 << SCALE) - 1;

/// Per-subflow state (Linux `struct mptcp_olia`, with the model's counterpart of `snd_una`).
#[derive(Clone, Debug)]
struct SfState {
    /// Segments ACKed so far: the model's `snd_una` (Linux's `mptcp_loss3` is its value at
    /// the last ACK).
    delivered: u64,
    /// `delivered` at the second-to-last and at the last loss (`mptcp_loss1`, `mptcp_loss2`).
    loss1: u64,
    loss2: u64,
    /// Fractional growth toward the next +-1 segment, in 2^-10 segments
    /// (`mptcp_snd_cwnd_cnt`).
    cnt: i64,
    /// The loss-recovery state, which Linux reads from every subflow's socket.
    ca_state: CaState,
}

impl Default for SfState {
    fn default() -> SfState {
        SfState {
            delivered: 0,
            loss1: 0,
            loss2: 0,
            cnt: 0,
            ca_state: CaState::Open,
        }
    }
}

impl SfState {
    /// l_r = max(l2_r, l1_r), in segments (Linux counts bytes of `snd_una`).
    fn inter_loss(&self) -> u64 {
        (self.delivered - self.loss2).max(self.loss2 - self.loss1)
    }
}

pub const INFO: CcInfo = CcInfo {
    name: "olia",
    description:
        "coupled: the Opportunistic Linked Increases Algorithm (Pareto-optimal where LIA is not)",
    source: "Khalili et al., CoNEXT 2012; Linux out-of-tree net/mptcp/mptcp_olia.c",
    coupled: true,
    single_path: "reno",
    build: || Box::new(Olia::new()),
};

pub struct Olia {
    sfs: Vec<SfState>,
}

impl Olia {
    pub fn new() -> Olia {
        Olia { sfs: Vec::new() }
    }

    fn sf(&mut self, sf: usize) -> &mut SfState {
        if self.sfs.len() <= sf {
            self.sfs.resize_with(sf + 1, SfState::default);
        }
        &mut self.sfs[sf]
    }

    fn inter_loss(&self, sf: usize) -> u64 {
        self.sfs.get(sf).map_or(0, SfState::inter_loss)
    }

    /// Linux `mptcp_get_crt_cwnd`: during fast recovery a window is inflated (RFC 5681), so
    /// count it as ssthresh.
    fn crt_cwnd(&self, sf: usize, s: &CcState) -> u32 {
        match self.sfs.get(sf).map(|x| x.ca_state) {
            Some(CaState::Recovery) => s.ssthresh,
            _ => s.cwnd,
        }
    }

    /// Linux `mptcp_get_epsilon`, for subflow `sf`: alpha_sf = num / den.
    fn epsilon(&self, sf: usize, st: &CcState, all: &[CcState]) -> (i64, u64) {
        let established = subflows(sf, st, all).filter(|(_, s)| s.active).count() as u64;
        // (subflow, window, l_r, rtt_r^2) of every subflow that can send.
        let paths = || {
            subflows(sf, st, all)
                .filter(|(_, s)| can_send(s))
                .map(|(i, s)| {
                    let rtt = srtt_us8(s.srtt) as u128;
                    (
                        i,
                        self.crt_cwnd(i, s),
                        self.inter_loss(i) as u128,
                        rtt * rtt,
                    )
                })
        };
        let Some((_, own_cwnd, own_l, own_rtt2)) = paths().find(|p| p.0 == sf) else {
            return (0, 1);
        };
        let max_cwnd = paths().map(|p| p.1).max().unwrap_or(0);

        // The best path: the largest l_r / rtt_r^2, compared by cross-multiplying; ties go to
        // the later subflow, and every path equal to it is in B.
        let (mut best_l, mut best_rtt2) = (0u128, 1u128);
        for (_, _, l, rtt2) in paths() {
            if l * best_rtt2 >= best_l * rtt2 {
                best_l = l;
                best_rtt2 = rtt2;
            }
        }
        let is_best = |l: u128, rtt2: u128| l * best_rtt2 == best_l * rtt2;
        let in_m = paths().filter(|p| p.1 == max_cwnd).count() as u64;
        let b_not_m = paths()
            .filter(|p| p.1 != max_cwnd && is_best(p.2, p.3))
            .count() as u64;

        if b_not_m == 0 {
            (0, 1)
        } else if own_cwnd < max_cwnd && is_best(own_l, own_rtt2) {
            (1, established * b_not_m)
        } else if own_cwnd == max_cwnd {
            (-1, established * in_m)
        } else {
            (0, 1)
        }
    }

    /// Linux's per-ACK step of `mptcp_olia_cong_avoid`, for one ACKed segment.
    fn increase(&mut self, sf: usize, st: &mut CcState, all: &[CcState]) {
        let (eps_num, eps_den) = self.epsilon(sf, st, all);
        let own_rtt = srtt_us8(st.srtt) as u128;

        // Linux `mptcp_get_rate`: (sum_p w_p * rtt_r / rtt_p)^2, each w_p scaled by 2^10, so
        // that (w_r / rtt_r^2) / (sum_p w_p / rtt_p)^2 = w_r / rate (times 2^20).
        let mut rate: u128 = 1; // never zero: it divides
        for (i, s) in subflows(sf, st, all).filter(|(_, s)| can_send(s)) {
            rate += ((self.crt_cwnd(i, s) as u128) << SCALE) * own_rtt / srtt_us8(s.srtt) as u128;
        }
        let rate = rate * rate;

        // increase = (eps_num * rate + eps_den * cwnd_scaled^2) / (eps_den * cwnd * rate)
        //          = alpha_r / w_r + (w_r / rtt_r^2) / (sum_p w_p / rtt_p)^2, in 2^-10 segments.
        let cwnd_scaled = (st.cwnd as u128) << SCALE;
        let den = (eps_den as u128 * st.cwnd as u128 * rate).max(1);
        let window_term = eps_den as u128 * cwnd_scaled * cwnd_scaled;
        let inc: i128 = if eps_num == -1 {
            if window_term < rate {
                -((((rate - window_term) << SCALE) / den) as i128)
            } else {
                (((window_term - rate) << SCALE) / den) as i128
            }
        } else {
            (((eps_num as u128 * rate + window_term) << SCALE) / den) as i128
        };

        let s = self.sf(sf);
        s.cnt = (s.cnt as i128 + inc).clamp(i64::MIN as i128, i64::MAX as i128) as i64;
        if s.cnt >= ONE_SEGMENT {
            st.cwnd += 1;
            s.cnt = 0;
        } else if s.cnt <= -ONE_SEGMENT {
            // A negative alpha_r can shrink the window of a path in M; Linux floors it at 1.
            st.cwnd = st.cwnd.saturating_sub(1).max(1);
            s.cnt = 0;
        }
    }
}

impl Default for Olia {
    fn default() -> Olia {
        Olia::new()
    }
}

impl CongestionControl for Olia {
    fn name(&self) -> &'static str {
        "olia"
    }

    /// Linux `mptcp_olia_init`: no loss seen yet (loss1 = loss2 = snd_una).
    fn init(&mut self, sf: usize, _st: &mut CcState, _now: Time) {
        let s = self.sf(sf);
        *s = SfState {
            delivered: s.delivered,
            loss1: s.delivered,
            loss2: s.delivered,
            ..SfState::default()
        };
    }

    fn coupled(&self) -> bool {
        true
    }

    /// Linux `mptcp_olia_cong_avoid`.
    fn cong_avoid(&mut self, sf: usize, st: &mut CcState, acked: u32, _now: Time, all: &[CcState]) {
        let mut acked = acked;
        if st.in_slow_start() {
            // Slow start as TCP (RFC 5681 3.1), per subflow.
            acked = st.slow_start(acked);
            if acked == 0 {
                return;
            }
        }
        let others_can_send = subflows(sf, st, all).any(|(i, s)| i != sf && can_send(s));
        if !can_send(st) || !others_can_send {
            // One path: the increase is w / w^2 = 1 / w per segment, Reno (RFC 5681 eq. 3).
            let w = st.cwnd;
            st.cong_avoid_ai(w, acked);
            return;
        }
        for _ in 0..acked {
            self.increase(sf, st, all);
        }
    }

    /// Linux `tcp_reno_ssthresh`: the decrease halves the window (draft section 3).
    fn ssthresh(&mut self, _sf: usize, st: &CcState, _now: Time, _all: &[CcState]) -> u32 {
        (st.cwnd / 2).max(2)
    }

    /// Counts the ACKed segments: Linux reads `snd_una` instead.
    fn pkts_acked(&mut self, sf: usize, _st: &CcState, sample: &AckSample, _now: Time) {
        self.sf(sf).delivered += sample.acked as u64;
    }

    /// Linux `mptcp_olia_set_state`: a loss (fast recovery or RTO) closes an inter-loss
    /// interval, l1_r = the data ACKed since the previous loss, unless nothing was ACKed since
    /// or this is a repeated timeout (Linux: `icsk_retransmits` non-zero).
    fn set_state(&mut self, sf: usize, _st: &mut CcState, state: CaState, _now: Time) {
        let s = self.sf(sf);
        if matches!(state, CaState::Loss | CaState::Recovery) {
            let repeated_timeout = state == CaState::Loss && s.ca_state == CaState::Loss;
            if s.delivered != s.loss2 && !repeated_timeout {
                s.loss1 = s.loss2;
                s.loss2 = s.delivered;
            }
        }
        s.ca_state = state;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cc::Reno;
    use crate::time::Dur;

    fn sub(cwnd: u32, rtt_ms: u64) -> CcState {
        CcState {
            cwnd,
            ssthresh: cwnd,
            srtt: Dur::from_millis(rtt_ms),
            min_rtt: Dur::from_millis(rtt_ms),
            ..CcState::new()
        }
    }

    fn acks(cc: &mut Olia, sf: usize, n: u64) {
        let sample = AckSample {
            acked: 1,
            rtt: None,
            in_flight: 0,
        };
        let st = CcState::new();
        for _ in 0..n {
            cc.pkts_acked(sf, &st, &sample, Time::ZERO);
        }
    }

    /// A loss on `sf` after `n` more segments were ACKed on it.
    fn loss_after(cc: &mut Olia, sf: usize, st: &mut CcState, n: u64) {
        acks(cc, sf, n);
        cc.set_state(sf, st, CaState::Recovery, Time::ZERO);
        cc.set_state(sf, st, CaState::Open, Time::ZERO);
    }

    #[test]
    fn single_subflow_is_reno_exactly() {
        let mut olia = Olia::new();
        let mut a = CcState::new();
        a.srtt = Dur::from_millis(30);
        let mut b = a;
        olia.init(0, &mut a, Time::ZERO);
        a.ssthresh = 37;
        b.ssthresh = 37;
        // Another subflow, inactive, then active but without an RTT sample yet.
        let idle = CcState {
            active: false,
            ..sub(50, 10)
        };
        let fresh = CcState {
            srtt: Dur::ZERO,
            ..sub(50, 10)
        };
        let mut max_cwnd = 0;
        for i in 0..5000u32 {
            let acked = 1 + i % 3;
            if i % 1200 == 1199 {
                let sa = olia.ssthresh(0, &a, Time::ZERO, &[]);
                assert_eq!(sa, Reno.ssthresh(0, &b, Time::ZERO, &[]));
                a.ssthresh = sa;
                a.cwnd = sa;
                b = a;
                loss_after(&mut olia, 0, &mut a, 0);
            }
            let all = [a, if i < 2500 { idle } else { fresh }];
            olia.cong_avoid(0, &mut a, acked, Time::ZERO, &all);
            Reno.cong_avoid(0, &mut b, acked, Time::ZERO, &all);
            assert_eq!(a, b, "step {i}");
            max_cwnd = max_cwnd.max(a.cwnd);
        }
        assert!(max_cwnd > 60);
    }

    #[test]
    fn ssthresh_halves() {
        let mut olia = Olia::new();
        let st = sub(41, 10);
        assert_eq!(olia.ssthresh(0, &st, Time::ZERO, &[]), 20);
        assert_eq!(olia.ssthresh(0, &sub(3, 10), Time::ZERO, &[]), 2);
    }

    #[test]
    fn alpha_favours_the_best_path_without_the_largest_window() {
        let mut olia = Olia::new();
        let mut all = [sub(10, 20), sub(30, 80)];
        for (i, s) in all.iter_mut().enumerate() {
            olia.init(i, s, Time::ZERO);
        }
        // No loss yet: every l_r = 0 ties, all paths are "best"; path 1 has the largest
        // window, so path 0 is in B \ M: alpha_0 = +1/2, alpha_1 = -1/2.
        assert_eq!(olia.epsilon(0, &all[0], &all), (1, 2));
        assert_eq!(olia.epsilon(1, &all[1], &all), (-1, 2));

        // Equal inter-loss data (500 segments): the shorter RTT is the better path.
        loss_after(&mut olia, 0, &mut all[0], 500);
        loss_after(&mut olia, 1, &mut all[1], 500);
        assert_eq!(olia.epsilon(0, &all[0], &all), (1, 2));
        assert_eq!(olia.epsilon(1, &all[1], &all), (-1, 2));

        // Path 1 now sees 20x fewer losses: l_1 / rtt_1^2 = 10000/6400 > l_0 / rtt_0^2 =
        // 500/400, so the best path holds the largest window already: alpha = 0 for both.
        loss_after(&mut olia, 1, &mut all[1], 10_000);
        assert_eq!(olia.inter_loss(1), 10_000);
        assert_eq!(olia.epsilon(0, &all[0], &all), (0, 1));
        assert_eq!(olia.epsilon(1, &all[1], &all), (0, 1));

        // A window in fast recovery counts as its ssthresh: path 1 (ssthresh 5) is no longer
        // the largest, it is best, so it gets +1/2 and path 0 (now M) -1/2.
        all[1].ssthresh = 5;
        olia.set_state(1, &mut all[1], CaState::Recovery, Time::ZERO);
        assert_eq!(olia.epsilon(1, &all[1], &all), (1, 2));
        assert_eq!(olia.epsilon(0, &all[0], &all), (-1, 2));
    }

    #[test]
    fn inter_loss_distances() {
        let mut olia = Olia::new();
        let mut st = sub(10, 10);
        olia.init(0, &mut st, Time::ZERO);
        loss_after(&mut olia, 0, &mut st, 300);
        assert_eq!(olia.inter_loss(0), 300); // l1 = 300
        acks(&mut olia, 0, 400);
        assert_eq!(olia.inter_loss(0), 400); // l2 = 400 > l1
        olia.set_state(0, &mut st, CaState::Loss, Time::ZERO);
        // A repeated timeout with no progress in between does not open a new interval...
        olia.set_state(0, &mut st, CaState::Loss, Time::ZERO);
        assert_eq!((olia.sfs[0].loss1, olia.sfs[0].loss2), (300, 700));
        // ... nor a second loss before anything more was ACKed.
        olia.set_state(0, &mut st, CaState::Open, Time::ZERO);
        olia.set_state(0, &mut st, CaState::Recovery, Time::ZERO);
        assert_eq!((olia.sfs[0].loss1, olia.sfs[0].loss2), (300, 700));
        assert_eq!(olia.inter_loss(0), 400);
    }

    /// Runs `ms` milliseconds: every path gets one window of ACKs per its RTT.
    fn run(olia: &mut Olia, all: &mut [CcState], rtts_ms: &[u64], ms: u64) {
        for t in 1..=ms {
            for i in 0..all.len() {
                if !t.is_multiple_of(rtts_ms[i]) {
                    continue;
                }
                for _ in 0..all[i].cwnd {
                    acks(olia, i, 1);
                    let snapshot = all.to_vec();
                    olia.cong_avoid(i, &mut all[i], 1, Time::ZERO, &snapshot);
                }
            }
        }
    }

    #[test]
    fn window_shifts_toward_the_best_path() {
        // Path 0: 20 ms, path 1: 80 ms, the same loss history; path 1 holds the larger window.
        // Both are in congestion avoidance well above ssthresh (a window brought below it by
        // a negative alpha goes back to slow start, in Linux as here).
        let rtts = [20, 80];
        let mut olia = Olia::new();
        let mut all = [sub(10, 20), sub(40, 80)];
        for (i, s) in all.iter_mut().enumerate() {
            s.ssthresh = 5;
            olia.init(i, s, Time::ZERO);
            loss_after(&mut olia, i, s, 500);
        }
        // One second without loss: the best path (0) grows by alpha / w on top of the coupled
        // term, the max-window path (1) loses alpha / w: it shrinks.
        run(&mut olia, &mut all, &rtts, 1000);
        assert!(all[1].cwnd < 40, "path 1 kept {}", all[1].cwnd);
        // The coupled term alone, (w_0/rtt_0^2)/(sum_p w_p/rtt_p)^2 per ACK, is 0.25 segment
        // per RTT at (10, 40): the 50 RTTs would bring path 0 to about 25.
        assert!(all[0].cwnd > 35, "path 0 grew to {}", all[0].cwnd);
        // Once the best path holds the largest window, alpha = 0 for both and they stop
        // trading: path 1 no longer shrinks.
        let mut olia2 = Olia::new();
        let mut all2 = [sub(40, 20), sub(10, 80)];
        for (i, s) in all2.iter_mut().enumerate() {
            s.ssthresh = 5;
            olia2.init(i, s, Time::ZERO);
            loss_after(&mut olia2, i, s, 500);
        }
        assert_eq!(olia2.epsilon(1, &all2[1], &all2), (0, 1));
        run(&mut olia2, &mut all2, &rtts, 1000);
        assert!(all2[1].cwnd >= 10 && all2[0].cwnd > 40);
    }
}

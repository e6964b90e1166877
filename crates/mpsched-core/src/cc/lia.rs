//! LIA, the Linked Increases Algorithm of RFC 6356 ("Coupled Congestion Control for Multipath
//! Transport Protocols"), as the out-of-tree Linux MPTCP implementation runs it
//! (`net/mptcp/mptcp_coupled.c`, "lia").
//!
//! RFC 6356 section 3: slow start and the decrease are those of TCP on each subflow; in
//! congestion avoidance, each ACK on subflow i grows cwnd_i by
//! min(alpha * acked / cwnd_total, acked / cwnd_i), with (eq. 2)
//! alpha = cwnd_total * max_i(cwnd_i / rtt_i^2) / (sum_i cwnd_i / rtt_i)^2.
//!
//! Linux keeps one alpha per connection, in fixed point, and refreshes it only at fixed
//! moments (every slow-start ACK, each +1 of a window in congestion avoidance, and the first
//! congestion-avoidance ACK after any subflow changed loss-recovery state); between those it is
//! stale, and so is it here. It counts ACKs toward the next +1; this model counts ACKed
//! segments, as RFC 6356's `bytes_acked` and Linux's `tcp_cong_avoid_ai` (so that a single
//! subflow is exactly `Reno`). Slow start likewise carries the segments left over at ssthresh
//! into congestion avoidance, as Reno does; `mptcp_coupled.c` drops them.

use super::{CaState, CcInfo, CcState, CongestionControl};
use crate::time::{Dur, Time};

/// Linux `alpha_scale_num = 32`: the numerator of alpha is scaled by 2^32...
const ALPHA_SCALE_NUM: u32 = 32;
/// ... Linux `alpha_scale_den = 10`: each term of the denominator's sum by 2^10...
const ALPHA_SCALE_DEN: u32 = 10;
/// ... so Linux `alpha_scale = 32 - 2 * 10 = 12`: the stored alpha is (alpha / cwnd_total)
/// scaled by 2^12.
const ALPHA_SCALE: u32 = ALPHA_SCALE_NUM - 2 * ALPHA_SCALE_DEN;

/// Linux's `srtt_us`: the smoothed RTT in microseconds, times 8 (zero before the first sample).
pub(super) fn srtt_us8(srtt: Dur) -> u64 {
    if srtt == Dur::ZERO {
        0
    } else {
        (srtt.as_nanos() * 8 / 1_000).max(1)
    }
}

/// The subflows of the connection, with the caller's live state in place of its own entry in
/// the snapshot `all` (which may also be empty, or miss it).
pub(super) fn subflows<'a>(
    sf: usize,
    st: &'a CcState,
    all: &'a [CcState],
) -> impl Iterator<Item = (usize, &'a CcState)> + 'a {
    let n = all.len().max(sf + 1);
    (0..n).map(move |i| (i, if i == sf { st } else { &all[i] }))
}

/// Linux's `mptcp_sk_can_send(sk) && srtt_us`: established, with an RTT estimate.
pub(super) fn can_send(s: &CcState) -> bool {
    s.active && s.srtt > Dur::ZERO
}

/// LIA. Its only state is per connection, like Linux's (on the meta socket).
pub const INFO: CcInfo = CcInfo {
    name: "lia",
    description:
        "coupled: the Linked Increases Algorithm, no more aggressive than one TCP on the best path",
    source: "RFC 6356; Linux out-of-tree net/mptcp/mptcp_coupled.c",
    coupled: true,
    single_path: "reno",
    build: || Box::new(Lia::new()),
};

pub struct Lia {
    /// alpha / cwnd_total, scaled by 2^12 (Linux `mptcp_ccc.alpha`).
    alpha: u64,
    /// Recompute alpha at the next congestion-avoidance ACK (Linux `forced_update`).
    forced_update: bool,
}

impl Lia {
    pub fn new() -> Lia {
        Lia {
            alpha: 1,
            forced_update: false,
        }
    }

    /// Linux `mptcp_ccc_recalc_alpha`: RFC 6356 eq. 2, divided by cwnd_total, in fixed point.
    /// Dividing the numerator and the denominator by the best path's rtt^2 keeps the integers
    /// small: alpha / cwnd_total = (cwnd_b / rtt_b^2) / (sum_i cwnd_i / rtt_i)^2
    /// = cwnd_b / (sum_i cwnd_i * rtt_b / rtt_i)^2, where b maximises cwnd_i / rtt_i^2.
    fn recalc_alpha(&mut self, sf: usize, st: &CcState, all: &[CcState]) {
        self.alpha = 1;
        // Only one subflow established: Reno, alpha unused.
        if subflows(sf, st, all).filter(|(_, s)| s.active).count() <= 1 {
            return;
        }
        let (mut max_numerator, mut best_cwnd, mut best_rtt) = (0u128, 0u128, 0u128);
        let mut any = false;
        for (_, s) in subflows(sf, st, all).filter(|(_, s)| can_send(s)) {
            any = true;
            let rtt = srtt_us8(s.srtt) as u128;
            let tmp = ((s.cwnd as u128) << ALPHA_SCALE_NUM) / (rtt * rtt);
            // Ties go to the later subflow, as in Linux.
            if tmp >= max_numerator {
                max_numerator = tmp;
                best_cwnd = s.cwnd as u128;
                best_rtt = rtt;
            }
        }
        if !any {
            return;
        }
        let sum: u128 = subflows(sf, st, all)
            .filter(|(_, s)| can_send(s))
            .map(|(_, s)| {
                ((s.cwnd as u128) << ALPHA_SCALE_DEN) * best_rtt / srtt_us8(s.srtt) as u128
            })
            .sum();
        // Linux squares in 64 bits; 128 keeps large windows from overflowing.
        if let Some(alpha) = (best_cwnd << ALPHA_SCALE_NUM).checked_div(sum * sum) {
            self.alpha = alpha.clamp(1, u64::MAX as u128) as u64;
        }
    }
}

impl Default for Lia {
    fn default() -> Lia {
        Lia::new()
    }
}

impl CongestionControl for Lia {
    fn name(&self) -> &'static str {
        "lia"
    }

    /// Linux `mptcp_ccc_init`.
    fn init(&mut self, _sf: usize, _st: &mut CcState, _now: Time) {
        self.alpha = 1;
        self.forced_update = false;
    }

    fn coupled(&self) -> bool {
        true
    }

    /// Linux `mptcp_ccc_cong_avoid`.
    fn cong_avoid(&mut self, sf: usize, st: &mut CcState, acked: u32, _now: Time, all: &[CcState]) {
        let mut acked = acked;
        if st.in_slow_start() {
            // RFC 6356 section 3: slow start as TCP (RFC 5681 3.1), per subflow.
            acked = st.slow_start(acked);
            self.recalc_alpha(sf, st, all);
            if acked == 0 {
                return;
            }
        }

        if self.forced_update {
            self.recalc_alpha(sf, st, all);
            self.forced_update = false;
        }

        // RFC 6356 section 3: +1 segment once w segments are ACKed, with
        // 1/w = min(alpha / cwnd_total, 1 / cwnd_i); the min is the cap of RFC 6356 goal 2,
        // never more aggressive than TCP on this path.
        let established = subflows(sf, st, all).filter(|(_, s)| s.active).count();
        let w = if established > 1 {
            let w = (1u64 << ALPHA_SCALE) / self.alpha.max(1);
            w.min(u32::MAX as u64).max(st.cwnd as u64) as u32
        } else {
            st.cwnd
        };
        let before = st.cwnd;
        st.cong_avoid_ai(w, acked);
        if st.cwnd != before {
            self.recalc_alpha(sf, st, all);
        }
    }

    /// Linux `tcp_reno_ssthresh` (RFC 6356 section 3: the decrease is TCP's, RFC 5681 eq. 4).
    fn ssthresh(&mut self, _sf: usize, st: &CcState, _now: Time, _all: &[CcState]) -> u32 {
        (st.cwnd / 2).max(2)
    }

    /// Linux `mptcp_ccc_set_state`: any change of loss-recovery state forces a fresh alpha.
    fn set_state(&mut self, _sf: usize, _st: &mut CcState, _state: CaState, _now: Time) {
        self.forced_update = true;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cc::Reno;

    fn sub(cwnd: u32, rtt_ms: u64) -> CcState {
        CcState {
            cwnd,
            ssthresh: cwnd,
            srtt: Dur::from_millis(rtt_ms),
            min_rtt: Dur::from_millis(rtt_ms),
            ..CcState::new()
        }
    }

    /// The per-ACK threshold w for subflow `sf` after a fresh alpha.
    fn w_of(sf: usize, all: &[CcState]) -> u32 {
        let mut lia = Lia::new();
        lia.recalc_alpha(sf, &all[sf], all);
        (((1u64 << ALPHA_SCALE) / lia.alpha) as u32).max(all[sf].cwnd)
    }

    #[test]
    fn single_subflow_is_reno_exactly() {
        let mut lia = Lia::new();
        let mut a = CcState::new();
        a.srtt = Dur::from_millis(30);
        let mut b = a;
        // A second, inactive subflow does not count.
        let other = CcState {
            active: false,
            ..sub(50, 10)
        };
        lia.init(0, &mut a, Time::ZERO);
        a.ssthresh = 37;
        b.ssthresh = 37;
        let mut max_cwnd = 0;
        for i in 0..5000u32 {
            let acked = 1 + i % 3;
            if i % 1200 == 1199 {
                let (sa, sb) = (
                    lia.ssthresh(0, &a, Time::ZERO, &[]),
                    Reno.ssthresh(0, &b, Time::ZERO, &[]),
                );
                assert_eq!(sa, sb);
                a.ssthresh = sa;
                a.cwnd = sa;
                b = a;
                lia.set_state(0, &mut a, CaState::Recovery, Time::ZERO);
                lia.set_state(0, &mut a, CaState::Open, Time::ZERO);
            }
            let all = [a, other];
            lia.cong_avoid(0, &mut a, acked, Time::ZERO, &all);
            Reno.cong_avoid(0, &mut b, acked, Time::ZERO, &all);
            assert_eq!(a, b, "step {i}");
            max_cwnd = max_cwnd.max(a.cwnd);
        }
        assert!(max_cwnd > 60);
    }

    #[test]
    fn alpha_matches_rfc_6356() {
        // Two identical subflows: alpha = 2w * (w/r^2) / (2w/r)^2 = 1/2, so each ACK adds
        // alpha / cwnd_total = 1 / (4w): w = 4 * cwnd_i.
        assert_eq!(w_of(0, &[sub(20, 50), sub(20, 50)]), 80);
        // A fast small path and a slow big one (10 ms x 10, 200 ms x 100):
        // alpha = 110 * max(10/100, 100/40000) / (10/10 + 100/200)^2 = 4.89,
        // alpha / cwnd_total = 1/22.5: subflow 0 needs 22 ACKs per +1 (Linux rounds down) ...
        let all = [sub(10, 10), sub(100, 200)];
        assert_eq!(w_of(0, &all), 22);
        // ... while subflow 1 is capped at TCP's 1/cwnd (RFC 6356 goal 2).
        assert_eq!(w_of(1, &all), 100);
    }

    /// Per RTT, every subflow receives one ACK per segment of its window.
    fn rtt_round(cc: &mut dyn CongestionControl, subs: &mut [CcState]) {
        let acks: Vec<u32> = subs.iter().map(|s| s.cwnd).collect();
        for (i, n) in acks.into_iter().enumerate() {
            for _ in 0..n {
                let snapshot = subs.to_vec();
                cc.cong_avoid(i, &mut subs[i], 1, Time::ZERO, &snapshot);
            }
        }
    }

    #[test]
    fn two_identical_subflows_grow_like_half_a_reno_flow() {
        let mut lia = Lia::new();
        let mut subs = [sub(20, 50), sub(20, 50)];
        for (i, s) in subs.iter_mut().enumerate() {
            lia.init(i, s, Time::ZERO);
        }
        // As after a loss: alpha is refreshed at the next congestion-avoidance ACK.
        lia.set_state(0, &mut subs[0], CaState::Open, Time::ZERO);
        for _ in 0..40 {
            rtt_round(&mut lia, &mut subs);
        }
        // alpha = 1/2: the pair gains 1/2 segment per RTT in total (one Reno flow: 1), and it
        // halves only the subflow that sees a loss, so under a common loss rate the pair
        // takes what one TCP flow would (RFC 6356 section 3, goals 1 and 2).
        let total = subs[0].cwnd + subs[1].cwnd;
        // (Linux's fixed point rounds alpha down: 58 here, 60 with exact arithmetic; 120
        // uncoupled.)
        assert!((56..=61).contains(&total), "total {total} after 40 RTTs");
        assert_eq!(subs[0].cwnd, subs[1].cwnd);
    }

    /// Average total window under one loss every `loss_every` segments on each subflow.
    fn periodic_loss(cc: &mut dyn CongestionControl, n: usize, loss_every: u64) -> f64 {
        let mut subs = vec![sub(10, 50); n];
        for (i, s) in subs.iter_mut().enumerate() {
            s.ssthresh = 10;
            cc.init(i, s, Time::ZERO);
        }
        let mut sent = vec![0u64; n];
        let (mut sum, mut rounds) = (0u64, 0u64);
        for r in 0..20_000 {
            let acks: Vec<u32> = subs.iter().map(|s| s.cwnd).collect();
            for (i, k) in acks.into_iter().enumerate() {
                for _ in 0..k {
                    sent[i] += 1;
                    let snapshot = subs.clone();
                    if sent[i].is_multiple_of(loss_every) {
                        let ssthresh = cc.ssthresh(i, &subs[i], Time::ZERO, &snapshot);
                        subs[i].ssthresh = ssthresh;
                        subs[i].cwnd = ssthresh;
                        subs[i].cwnd_cnt = 0;
                        cc.set_state(i, &mut subs[i], CaState::Recovery, Time::ZERO);
                        cc.set_state(i, &mut subs[i], CaState::Open, Time::ZERO);
                    } else {
                        cc.cong_avoid(i, &mut subs[i], 1, Time::ZERO, &snapshot);
                    }
                }
            }
            if r >= 5_000 {
                sum += subs.iter().map(|s| s.cwnd as u64).sum::<u64>();
                rounds += 1;
            }
        }
        sum as f64 / rounds as f64
    }

    #[test]
    fn coupled_subflows_take_one_tcp_share() {
        // Two subflows through one bottleneck see the same loss rate as a TCP flow there.
        let reno = periodic_loss(&mut Reno, 1, 2000);
        let lia = periodic_loss(&mut Lia::new(), 2, 2000);
        assert!(
            (0.85 * reno..=1.15 * reno).contains(&lia),
            "lia {lia:.1} vs reno {reno:.1}"
        );
        // Uncoupled, the pair would take twice one flow's share at this loss rate.
        let uncoupled = periodic_loss(&mut Reno, 2, 2000);
        assert!(
            uncoupled > 1.8 * reno,
            "uncoupled {uncoupled:.1} vs reno {reno:.1}"
        );
    }

    #[test]
    fn never_faster_than_reno_on_any_subflow() {
        // Heterogeneous subflows, each run side by side with a Reno copy fed the same ACKs.
        let mut lia = Lia::new();
        let mut subs = [sub(10, 10), sub(100, 200), sub(30, 40)];
        let mut renos = subs;
        for (i, s) in subs.iter_mut().enumerate() {
            lia.init(i, s, Time::ZERO);
        }
        // As after a loss: alpha is refreshed at the next congestion-avoidance ACK.
        lia.set_state(0, &mut subs[0], CaState::Open, Time::ZERO);
        for _ in 0..30 {
            let acks: Vec<u32> = subs.iter().map(|s| s.cwnd).collect();
            for (i, n) in acks.into_iter().enumerate() {
                for _ in 0..n {
                    let snapshot = subs;
                    lia.cong_avoid(i, &mut subs[i], 1, Time::ZERO, &snapshot);
                    Reno.cong_avoid(i, &mut renos[i], 1, Time::ZERO, &[]);
                    assert!(subs[i].cwnd <= renos[i].cwnd);
                }
            }
        }
        // The capped subflow (the big slow one) grows exactly as Reno; the others less.
        assert_eq!(subs[1].cwnd, renos[1].cwnd);
        assert!(subs[0].cwnd < renos[0].cwnd && subs[2].cwnd < renos[2].cwnd);
    }
}

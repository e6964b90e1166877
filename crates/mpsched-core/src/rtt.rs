//! RTT estimation and the retransmission timeout: RFC 6298, with Linux's choices.
//!
//! Linux differs from the RFC's letter in one way that matters for the model: the 200 ms
//! minimum (`TCP_RTO_MIN`) bounds the variance term, not the RTO (`tcp_set_rto`,
//! `tcp_rtt_estimator`), so RTO = SRTT + max(4 RTTVAR, 200 ms).

use crate::jiffies::Jiffies;
use crate::time::{Dur, Time};

/// RFC 6298 (2.1): before any sample, RTO = 1 s.
pub const INITIAL_RTO: Dur = Dur::from_secs(1);
/// Linux `TCP_RTO_MIN`.
pub const RTO_MIN: Dur = Dur::from_millis(200);
/// RFC 6298 (2.4): "whenever RTO is computed, if it is less than 1 second, then the RTO
/// should be rounded up to 1 second" (`LossRecovery::Classic`; ns-3's `MinRto`).
pub const RFC_RTO_MIN: Dur = Dur::from_secs(1);
/// RFC 6298 (2.5) allows a maximum of at least 60 s; Linux's `TCP_RTO_MAX` is 120 s.
pub const RTO_MAX: Dur = Dur::from_secs(120);

#[derive(Clone, Debug)]
pub struct RttEstimator {
    srtt: Option<Dur>,
    rttvar: Dur,
    min_rtt: Option<Dur>,
    latest: Dur,
    /// Exponential backoff exponent (RFC 6298 5.5).
    backoff: u32,
    /// RFC 6298's letter: the RTO itself is at least 1 s (else Linux's variance floor).
    rfc_floor: bool,
    /// The kernel's ticks: the RTO is whole ticks (`__tcp_set_rto`: `usecs_to_jiffies`).
    jiffies: Jiffies,
}

impl Default for RttEstimator {
    fn default() -> Self {
        Self::new()
    }
}

impl RttEstimator {
    pub fn new() -> RttEstimator {
        RttEstimator {
            srtt: None,
            rttvar: Dur::ZERO,
            min_rtt: None,
            latest: Dur::ZERO,
            backoff: 0,
            rfc_floor: false,
            jiffies: Jiffies::EXACT,
        }
    }

    pub fn set_jiffies(&mut self, jiffies: Jiffies) {
        self.jiffies = jiffies;
    }

    /// RTO = max(SRTT + 4 RTTVAR, 1 s), RFC 6298 (2.4), instead of Linux's
    /// SRTT + max(4 RTTVAR, 200 ms).
    pub fn use_rfc_floor(&mut self) {
        self.rfc_floor = true;
    }

    /// Takes one RTT measurement.
    pub fn on_sample(&mut self, r: Dur) {
        // Linux never uses a zero sample (`tcp_rtt_estimator`: m = 1 us at least).
        let r = r.max(Dur::from_micros(1));
        self.latest = r;
        self.min_rtt = Some(self.min_rtt.map_or(r, |m| m.min(r)));
        match self.srtt {
            None => {
                // RFC 6298 (2.2)
                self.srtt = Some(r);
                self.rttvar = r / 2;
            }
            Some(srtt) => {
                // RFC 6298 (2.3): beta = 1/4, alpha = 1/8.
                let err = if srtt > r { srtt - r } else { r - srtt };
                self.rttvar = Dur((3 * self.rttvar.0 + err.0) / 4);
                self.srtt = Some(Dur((7 * srtt.0 + r.0) / 8));
            }
        }
    }

    /// An ACK of new data ends the backoff (RFC 6298 5.7 lets the RTO be recomputed; Linux
    /// clears `icsk_backoff` in `tcp_ack`).
    pub fn reset_backoff(&mut self) {
        self.backoff = 0;
    }

    /// RFC 6298 (5.5): back the timer off by a factor of two.
    pub fn on_rto(&mut self) {
        self.backoff = (self.backoff + 1).min(16);
    }

    pub fn backoff(&self) -> u32 {
        self.backoff
    }

    /// The current RTO, backoff included.
    pub fn rto(&self) -> Dur {
        let base = match self.srtt {
            None => INITIAL_RTO,
            Some(srtt) if self.rfc_floor => (srtt + self.rttvar * 4).max(RFC_RTO_MIN),
            Some(srtt) => srtt + (self.rttvar * 4).max(RTO_MIN),
        };
        (self.jiffies.round_up(base) * (1u64 << self.backoff)).min(RTO_MAX)
    }

    pub fn srtt(&self) -> Option<Dur> {
        self.srtt
    }
    pub fn rttvar(&self) -> Dur {
        self.rttvar
    }
    pub fn min_rtt(&self) -> Option<Dur> {
        self.min_rtt
    }
    pub fn latest(&self) -> Dur {
        self.latest
    }

    /// When the retransmission timer armed at `now` runs, and the deadline the kernel records
    /// for it (`icsk_timeout`).
    pub fn rto_timer(&self, now: Time) -> (Time, Time) {
        self.jiffies.arm(now, self.rto())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn first_sample_and_ewma() {
        let mut e = RttEstimator::new();
        assert_eq!(e.rto(), Dur::from_secs(1));
        e.on_sample(Dur::from_millis(100));
        assert_eq!(e.srtt(), Some(Dur::from_millis(100)));
        assert_eq!(e.rttvar(), Dur::from_millis(50));
        // 100 + max(200, 200) = 300 ms
        assert_eq!(e.rto(), Dur::from_millis(300));
        e.on_sample(Dur::from_millis(180));
        // srtt = 7/8 100 + 1/8 180 = 110; rttvar = 3/4 50 + 1/4 80 = 57.5
        assert_eq!(e.srtt(), Some(Dur::from_millis(110)));
        assert_eq!(e.rttvar(), Dur::from_micros(57_500));
        assert_eq!(e.rto(), Dur::from_millis(340));
        assert_eq!(e.min_rtt(), Some(Dur::from_millis(100)));
    }

    #[test]
    fn linux_minimum_bounds_the_variance_term() {
        let mut e = RttEstimator::new();
        for _ in 0..100 {
            e.on_sample(Dur::from_millis(20));
        }
        // RTTVAR decays toward 0, so RTO = 20 + 200 ms, not max(200, 20 + 4 RTTVAR).
        assert_eq!(e.rto(), Dur::from_millis(220));
    }

    #[test]
    fn backoff_doubles_and_caps() {
        let mut e = RttEstimator::new();
        e.on_sample(Dur::from_millis(100));
        e.on_rto();
        assert_eq!(e.rto(), Dur::from_millis(600));
        for _ in 0..20 {
            e.on_rto();
        }
        assert_eq!(e.rto(), RTO_MAX);
        e.reset_backoff();
        assert_eq!(e.rto(), Dur::from_millis(300));
    }
}

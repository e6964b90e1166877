//! Reno (RFC 5681), as Linux's `tcp_reno_*`: slow start, then one segment per window of
//! ACKed data; halve on loss.

use super::{CcInfo, CcState, CongestionControl};
use crate::time::Time;

pub const INFO: CcInfo = CcInfo {
    name: "reno",
    description: "slow start, then one segment per window of ACKed data; halve on loss",
    source: "RFC 5681; Linux tcp_reno_*",
    coupled: false,
    single_path: "reno",
    build: || Box::new(Reno),
};

pub struct Reno;

impl CongestionControl for Reno {
    fn name(&self) -> &'static str {
        "reno"
    }

    fn cong_avoid(
        &mut self,
        _sf: usize,
        st: &mut CcState,
        acked: u32,
        _now: Time,
        _all: &[CcState],
    ) {
        let mut acked = acked;
        if st.in_slow_start() {
            // RFC 5681 3.1 (and RFC 3465 with L = 1 segment per ACK'ed segment).
            acked = st.slow_start(acked);
            if acked == 0 {
                return;
            }
        }
        // RFC 5681 3.1, eq. (3): cwnd += SMSS*SMSS/cwnd per ACK, i.e. +1 per window.
        let w = st.cwnd;
        st.cong_avoid_ai(w, acked);
    }

    fn ssthresh(&mut self, _sf: usize, st: &CcState, _now: Time, _all: &[CcState]) -> u32 {
        // RFC 5681 3.1, eq. (4), on the window as Linux does (`tcp_reno_ssthresh`).
        (st.cwnd / 2).max(2)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn halves_on_loss_and_grows_linearly() {
        let mut r = Reno;
        let mut st = CcState::new();
        st.cwnd = 100;
        assert_eq!(r.ssthresh(0, &st, Time::ZERO, &[]), 50);
        st.cwnd = 50;
        st.ssthresh = 50;
        // Two windows of ACKs: +2 segments.
        for _ in 0..(50 + 51) {
            r.cong_avoid(0, &mut st, 1, Time::ZERO, &[]);
        }
        assert_eq!(st.cwnd, 52);
    }
}

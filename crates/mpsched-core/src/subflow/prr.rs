//! Proportional Rate Reduction (RFC 6937 3, PRR-SSRB, as Linux's `tcp_cwnd_reduction`): during
//! fast recovery the window falls to ssthresh in step with what the ACKs deliver, instead of
//! halving at once and then waiting half a round trip.

#[derive(Clone, Copy, Debug)]
pub struct Prr {
    delivered: u32,
    out: u32,
    prior_cwnd: u32,
}

impl Prr {
    pub fn new(prior_cwnd: u32) -> Prr {
        Prr {
            delivered: 0,
            out: 0,
            prior_cwnd,
        }
    }

    /// Recovery starts with the window at `cwnd` (RFC 6937's RecoverFS, as Linux takes it).
    pub fn start(&mut self, cwnd: u32) {
        *self = Prr::new(cwnd);
    }

    /// A segment went out during recovery.
    #[inline]
    pub fn on_send(&mut self) {
        self.out += 1;
    }

    /// The window after an ACK that delivered `delivered` segments, with `pipe` in flight;
    /// `None`: leave it (a duplicate that delivered nothing, once something was sent).
    pub fn cwnd(&mut self, delivered: u32, pipe: u32, ssthresh: u32) -> Option<u32> {
        if delivered == 0 && self.out > 0 {
            return None;
        }
        self.delivered += delivered;
        let pipe = pipe as i64;
        let ssthresh = ssthresh as i64;
        let delta = ssthresh - pipe;
        let sndcnt = if delta < 0 {
            let want = (self.delivered as u64 * ssthresh as u64)
                .div_ceil(self.prior_cwnd.max(1) as u64) as i64;
            want - self.out as i64
        } else {
            delta.min((self.delivered as i64 - self.out as i64).max(delivered as i64) + 1)
        };
        // Linux: the fast retransmit itself always goes out.
        let sndcnt = sndcnt.max(if self.out == 0 { 1 } else { 0 });
        Some((pipe + sndcnt).max(1) as u32)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn above_ssthresh_the_window_follows_delivered_times_ssthresh_over_prior_cwnd() {
        // RFC 6937 example: RecoverFS 20, ssthresh 10, pipe 19 after the first loss.
        let mut prr = Prr::new(20);
        // First ACK delivers 1: ceil(1 x 10 / 20) = 1 may go out.
        assert_eq!(prr.cwnd(1, 19, 10), Some(20));
        prr.on_send();
        // Next ACK delivers 1: ceil(2 x 10 / 20) - 1 = 0 more.
        assert_eq!(prr.cwnd(1, 18, 10), Some(18));
        // A duplicate delivering nothing leaves the window.
        assert_eq!(prr.cwnd(0, 18, 10), None);
    }

    #[test]
    fn below_ssthresh_it_grows_by_at_most_delivered_plus_one() {
        let mut prr = Prr::new(20);
        prr.on_send();
        // min(ssthresh - pipe, max(delivered so far - sent, delivered) + 1) = min(5, 4).
        assert_eq!(prr.cwnd(3, 5, 10), Some(5 + 4));
    }
}

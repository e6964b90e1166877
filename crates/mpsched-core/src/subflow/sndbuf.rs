//! The send buffer's size (`sk_sndbuf`), which Linux grows with the window and never shrinks.

use crate::cc::INITIAL_CWND;
use crate::subflow::scoreboard::DUP_THRESH;
use crate::time::Dur;

/// Send-buffer memory per segment of cwnd in `tcp_sndbuf_expand` (`per_mss`: the MSS and
/// header room rounded up to a power of two, plus the `sk_buff`). `ss -tm` on this machine's
/// kernel shows `tb` = 2 x 2,304 x the largest cwnd of each subflow.
pub const SNDBUF_PER_SEGMENT: u64 = 2304;

/// `tcp_sndbuf_expand`: room for twice the window (CUBIC and Reno: `sndbuf_expand` = 2), at
/// least the initial window's worth, at most `tcp_wmem[2]`.
pub fn sndbuf_for(cwnd: u32, wmem_max: u64) -> u64 {
    (2 * cwnd.max(INITIAL_CWND) as u64 * SNDBUF_PER_SEGMENT).min(wmem_max)
}

/// The out-of-tree MPTCP's `tcp_sndbuf_expand` for a subflow: twice the segments it sends in
/// the largest subflow RTT (`mptcp_check_snd_buf`: cwnd x RTT_max / sRTT, at least
/// `tcp_reordering` + 1), at most `tcp_wmem[2]`.
pub fn mptcp_v0_sndbuf_for(cwnd: u32, srtt: Dur, rtt_max: Dur, wmem_max: u64) -> u64 {
    let segs = if srtt == Dur::ZERO {
        0
    } else {
        cwnd as u64 * rtt_max.0.max(srtt.0) / srtt.0
    };
    (2 * segs.max(DUP_THRESH as u64 + 1) * SNDBUF_PER_SEGMENT).min(wmem_max)
}

/// `sk_sndbuf` in bytes of memory.
#[derive(Clone, Copy, Debug, Default)]
pub struct SendBuffer {
    bytes: u64,
}

impl SendBuffer {
    #[inline]
    pub fn bytes(&self) -> u64 {
        self.bytes
    }

    /// `tcp_new_space`: grow to `want`, unless the window is full
    /// (`tcp_should_expand_sndbuf`); the first sizing (`tcp_init_buffer_space`) always.
    pub fn expand_to(&mut self, want: u64, window_full: bool) {
        if !window_full || self.bytes == 0 {
            self.bytes = self.bytes.max(want);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_buffer_holds_twice_the_window_and_never_shrinks() {
        let mut b = SendBuffer::default();
        b.expand_to(sndbuf_for(20, u64::MAX), true);
        assert_eq!(b.bytes(), 2 * 20 * SNDBUF_PER_SEGMENT);
        b.expand_to(sndbuf_for(40, u64::MAX), true);
        assert_eq!(
            b.bytes(),
            2 * 20 * SNDBUF_PER_SEGMENT,
            "a full window does not grow it"
        );
        b.expand_to(sndbuf_for(5, u64::MAX), false);
        assert_eq!(b.bytes(), 2 * 20 * SNDBUF_PER_SEGMENT);
        assert_eq!(
            sndbuf_for(1, u64::MAX),
            2 * INITIAL_CWND as u64 * SNDBUF_PER_SEGMENT
        );
        assert_eq!(sndbuf_for(1000, 100_000), 100_000);
    }

    #[test]
    fn out_of_tree_send_buffer_is_sized_for_the_largest_rtt() {
        let ms = Dur::from_millis;
        // cwnd 40 at 20 ms beside a 200 ms subflow: 400 segments' worth, twice.
        assert_eq!(
            mptcp_v0_sndbuf_for(40, ms(20), ms(200), 64 << 20),
            2 * 400 * SNDBUF_PER_SEGMENT
        );
        // The slowest subflow sizes for its own window; tcp_wmem[2] caps; no RTT yet: 4.
        assert_eq!(
            mptcp_v0_sndbuf_for(40, ms(200), ms(200), 64 << 20),
            80 * 2304
        );
        assert_eq!(mptcp_v0_sndbuf_for(40, ms(20), ms(200), 1 << 20), 1 << 20);
        assert_eq!(
            mptcp_v0_sndbuf_for(40, Dur::ZERO, ms(200), 1 << 20),
            8 * 2304
        );
    }
}

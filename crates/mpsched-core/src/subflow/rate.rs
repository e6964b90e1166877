//! The delivery rate (Linux `tcp_rate.c`, simplified to the ACK-side interval) and the pacing
//! rate (`tcp_update_pacing_rate`), which schedulers read.

use crate::time::{Dur, Time};
use crate::units::wire;

/// Linux `tcp_update_pacing_rate`: 200% of cwnd/srtt while cwnd is below half of ssthresh
/// (early slow start), 120% from there on, "approaching the end of slow start" (bits per
/// second; 0 before the first RTT sample).
pub fn pacing_rate_bps(cwnd: u32, ssthresh: u32, packets_out: u32, srtt: Dur) -> u64 {
    let srtt = srtt.as_nanos();
    if srtt == 0 {
        return 0;
    }
    let ratio = if cwnd < ssthresh / 2 { 200 } else { 120 };
    let bits = cwnd.max(packets_out) as u128 * wire::MSS as u128 * 8;
    (bits * ratio * 1_000_000_000 / 100 / srtt as u128) as u64
}

/// The latest delivery-rate sample: packets delivered over an interval. Kept as the pair and
/// divided only when a scheduler asks, since most never do.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RateSample {
    pub packets: u64,
    pub interval_ns: u64,
}

impl RateSample {
    /// Bits per second, counting `wire::MSS` per packet as Linux does (`mss_cache`).
    pub fn bps(self) -> u64 {
        if self.interval_ns == 0 {
            return 0;
        }
        let bits = self.packets as u128 * wire::MSS as u128 * 8;
        (bits * 1_000_000_000 / self.interval_ns as u128) as u64
    }
}

/// What was delivered when: each segment is stamped with it when sent, and an ACK's sample
/// is the packets delivered since the stamp of the latest-sent segment it delivers.
#[derive(Clone, Copy, Debug)]
pub struct DeliveryRate {
    delivered: u64,
    delivered_time: Time,
    sample: RateSample,
}

/// A segment's stamp: the count delivered, and when, at its (re)transmission.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Stamp {
    pub delivered: u64,
    pub at: Time,
}

impl DeliveryRate {
    pub fn new(now: Time) -> DeliveryRate {
        DeliveryRate {
            delivered: 0,
            delivered_time: now,
            sample: RateSample::default(),
        }
    }

    #[inline]
    /// Linux `tp->delivered`: segments delivered so far.
    pub fn delivered(&self) -> u64 {
        self.delivered
    }

    pub fn stamp(&self) -> Stamp {
        Stamp {
            delivered: self.delivered,
            at: self.delivered_time,
        }
    }

    /// An ACK delivered `newly` segments; `reference` is the stamp of the one sent last.
    pub fn on_ack(&mut self, now: Time, newly: u32, reference: Option<Stamp>) {
        self.delivered += newly as u64;
        if newly == 0 {
            return;
        }
        if let Some(r) = reference {
            let interval = now.saturating_since(r.at).as_nanos();
            if interval > 0 {
                self.sample = RateSample {
                    packets: self.delivered - r.delivered,
                    interval_ns: interval,
                };
            }
        }
        self.delivered_time = now;
    }

    #[inline]
    pub fn sample(&self) -> RateSample {
        self.sample
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sample_spans_from_the_reference_stamp_to_the_ack() {
        let mut r = DeliveryRate::new(Time(0));
        r.on_ack(Time(1_000_000), 10, None);
        let stamp = r.stamp();
        r.on_ack(Time(11_000_000), 10, Some(stamp));
        // 10 packets in 10 ms.
        assert_eq!(r.sample().packets, 10);
        assert_eq!(r.sample().interval_ns, 10_000_000);
        assert_eq!(r.sample().bps(), 10 * wire::MSS as u64 * 8 * 100);
    }

    #[test]
    fn pacing_is_twice_the_window_rate_in_early_slow_start() {
        let srtt = Dur::from_millis(100);
        let window_bps = 10 * wire::MSS as u64 * 8 * 10;
        assert_eq!(pacing_rate_bps(10, 100, 0, srtt), 2 * window_bps);
        assert_eq!(pacing_rate_bps(10, 10, 0, srtt), window_bps * 12 / 10);
        assert_eq!(pacing_rate_bps(10, 10, 0, Dur::ZERO), 0);
    }
}

//! CoDel, Controlled Delay (RFC 8289): a queue that drops at its head when packets have waited
//! longer than `target` for at least `interval`, then at intervals shrinking with the inverse
//! square root of the drops (the control law), until the sojourn time falls below the target.
//! The state machine is RFC 8289's pseudocode (sec. 5): `dodequeue` judges one packet,
//! `dequeue` decides whether to drop it.

use crate::time::{Dur, Time};

/// RFC 8289's defaults: 5 ms of standing queue, judged over 100 ms.
pub const TARGET: Dur = Dur::from_millis(5);
pub const INTERVAL: Dur = Dur::from_millis(100);

#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CodelConfig {
    pub target: Dur,
    pub interval: Dur,
}

impl Default for CodelConfig {
    fn default() -> Self {
        CodelConfig {
            target: TARGET,
            interval: INTERVAL,
        }
    }
}

#[derive(Clone, Debug)]
pub struct Codel {
    cfg: CodelConfig,
    /// When the sojourn time will have been above target for an interval (`None`: below).
    first_above: Option<Time>,
    dropping: bool,
    drop_next: Time,
    count: u32,
    last_count: u32,
}

impl Codel {
    pub fn new(cfg: CodelConfig) -> Codel {
        Codel {
            cfg,
            first_above: None,
            dropping: false,
            drop_next: Time::ZERO,
            count: 0,
            last_count: 0,
        }
    }

    /// RFC 8289 `dodequeue`: whether the packet leaving the queue at `now` after `sojourn`
    /// may be dropped; `backlog` is what stays queued behind it, in bytes.
    fn ok_to_drop(&mut self, now: Time, sojourn: Dur, backlog: u64, mtu: u64) -> bool {
        if sojourn < self.cfg.target || backlog <= mtu {
            self.first_above = None;
            return false;
        }
        match self.first_above {
            None => {
                self.first_above = Some(now + self.cfg.interval);
                false
            }
            Some(t) => now >= t,
        }
    }

    fn control_law(&self, t: Time) -> Time {
        let step = self.cfg.interval.as_nanos() as f64 / f64::from(self.count.max(1)).sqrt();
        t + Dur(step as u64)
    }

    /// RFC 8289 `dequeue`, one packet at a time: the packet at the head leaves the queue at
    /// `now` having waited `sojourn`, with `backlog` bytes behind it. True: drop it (the caller
    /// then offers the next packet, at the same `now`).
    pub fn should_drop(&mut self, now: Time, sojourn: Dur, backlog: u64, mtu: u64) -> bool {
        let ok = self.ok_to_drop(now, sojourn, backlog, mtu);
        if self.dropping {
            if !ok {
                self.dropping = false;
                return false;
            }
            if now >= self.drop_next {
                self.count += 1;
                self.drop_next = self.control_law(self.drop_next);
                return true;
            }
            return false;
        }
        if ok {
            // Enter the dropping state; resume near the old rate if it was left recently.
            self.dropping = true;
            let delta = self.count.saturating_sub(self.last_count);
            self.count = if delta > 1
                && now.saturating_since(self.drop_next) < Dur(self.cfg.interval.as_nanos() * 16)
            {
                delta
            } else {
                1
            };
            self.drop_next = self.control_law(now);
            self.last_count = self.count;
            return true;
        }
        false
    }

    /// The queue went empty: no standing queue.
    pub fn on_empty(&mut self) {
        self.first_above = None;
        self.dropping = false;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(m: u64) -> Time {
        Time::ZERO + Dur::from_millis(m)
    }

    #[test]
    fn drops_after_an_interval_above_target_then_faster_by_the_control_law() {
        let mut c = Codel::new(CodelConfig::default());
        let mtu = 1500;
        // Sojourn 20 ms, a deep queue: the first packet starts the interval, no drop for 100 ms.
        assert!(!c.should_drop(ms(0), Dur::from_millis(20), 100_000, mtu));
        assert!(!c.should_drop(ms(99), Dur::from_millis(20), 100_000, mtu));
        // At 100 ms: the first drop, the next one interval / sqrt(1) later.
        assert!(c.should_drop(ms(100), Dur::from_millis(20), 100_000, mtu));
        assert!(!c.should_drop(ms(150), Dur::from_millis(20), 100_000, mtu));
        assert!(c.should_drop(ms(200), Dur::from_millis(20), 100_000, mtu));
        // Then at 100 / sqrt(2) = 70.7 ms after that.
        assert!(!c.should_drop(ms(270), Dur::from_millis(20), 100_000, mtu));
        assert!(c.should_drop(ms(271), Dur::from_millis(20), 100_000, mtu));
        // Below target: the dropping state ends.
        assert!(!c.should_drop(ms(300), Dur::from_millis(2), 100_000, mtu));
        assert!(!c.should_drop(ms(301), Dur::from_millis(20), 100_000, mtu));
    }

    #[test]
    fn never_drops_the_last_packet_or_below_target() {
        let mut c = Codel::new(CodelConfig::default());
        for t in 0..1000 {
            assert!(!c.should_drop(ms(t), Dur::from_millis(50), 1500, 1500));
            assert!(!c.should_drop(ms(t), Dur::from_millis(4), 1_000_000, 1500));
        }
    }
}

//! When a Linux timer runs: TCP's and MPTCP's timers count jiffies (ticks of `CONFIG_HZ`) and
//! wait in the kernel's timer wheel, whose outer levels keep a far deadline in a coarser
//! bucket and round it up so that no timer fires early (`kernel/time/timer.c`,
//! `calc_wheel_index`). The rounding grows with the wait: 1 tick below 63 ticks, 8 below 504,
//! 64 below 4,032, and so on. A 260 ms RTO backed off four times fires 4.352 s later at
//! HZ = 250 rather than 4.16 s: what a kernel's capture of a five-second outage shows, and
//! why its path came back half a second later than exact timers predicted.

use crate::time::{Dur, Time};

/// `LVL_CLK_SHIFT`: each wheel level's tick is 8 times the one below.
const LEVEL_SHIFT: u32 = 3;
/// `LVL_START(1)`: waits of fewer ticks stay in the finest level.
const LEVEL_START: u64 = 63;
/// `LVL_DEPTH` for HZ > 100: deeper waits are clamped, as the kernel clamps to its cutoff.
const LEVELS: u32 = 9;

/// The tick rates a Linux kernel is built with (`CONFIG_HZ`); 250 is the common default
/// (Debian, Ubuntu, Fedora; this project's testbed kernel).
pub const KERNEL_HZ: [u32; 4] = [100, 250, 300, 1000];

/// `KERNEL_HZ`'s default: the testbed's kernel and the main distributions'.
pub const DEFAULT_HZ: u32 = 250;

/// A kernel's timer clock: its tick, or none (timers run exactly when asked), and where the
/// kernel's jiffies stood when the run's clock read zero.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Jiffies {
    tick_ns: u64,
    /// The kernel's clock at time zero: jiffies x tick + the time since the last tick, modulo
    /// `PHASE_PERIOD` ticks. The wheel rounds on absolute jiffies, so the same wait ends on a
    /// different tick from one boot (or one second) to the next.
    offset_ns: u64,
}

/// The wheel's coarsest rounding (level 8: 2^24 ticks); a phase matters only modulo it.
pub const PHASE_PERIOD_TICKS: u64 = 1 << (LEVEL_SHIFT * (LEVELS - 1));

impl Jiffies {
    /// Timers at the nanosecond asked for (a tickless idealisation; tests of closed forms).
    pub const EXACT: Jiffies = Jiffies {
        tick_ns: 0,
        offset_ns: 0,
    };

    /// `CONFIG_HZ = hz`; 0 for `EXACT`.
    pub const fn hz(hz: u32) -> Jiffies {
        Jiffies {
            tick_ns: if hz == 0 {
                0
            } else {
                1_000_000_000 / hz as u64
            },
            offset_ns: 0,
        }
    }

    /// The same clock with the kernel's jiffies at `phase` (jiffies x tick + the time since
    /// the last tick) when the run starts; what a kernel run recorded (`mpsched emulate`).
    pub fn with_phase(self, phase: Dur) -> Jiffies {
        if self.is_exact() {
            return self;
        }
        Jiffies {
            offset_ns: phase.0 % (PHASE_PERIOD_TICKS * self.tick_ns),
            ..self
        }
    }

    pub fn is_exact(self) -> bool {
        self.tick_ns == 0
    }

    /// `n` ticks (`EXACT`: `n` ms, the HZ = 1000 kernels the constants were written for).
    pub fn ticks(self, n: u64) -> Dur {
        if self.is_exact() {
            Dur::from_millis(n)
        } else {
            Dur(n * self.tick_ns)
        }
    }

    /// `usecs_to_jiffies`: a span in whole ticks, rounded up.
    pub fn round_up(self, d: Dur) -> Dur {
        if self.is_exact() {
            return d;
        }
        Dur(d.0.div_ceil(self.tick_ns) * self.tick_ns)
    }

    /// When a timer armed at `now` to wait `after` (rounded up to ticks first) runs:
    /// `mod_timer(timer, jiffies + after)` and the wheel bucket it lands in.
    #[inline]
    pub fn expiry(self, now: Time, after: Dur) -> Time {
        self.arm(now, after).0
    }

    /// When a timer armed at `now` to wait `after` runs ([`Jiffies::expiry`]), and the
    /// deadline it records (`jiffies + after`, the kernel's `icsk_timeout`), which is before
    /// it runs by up to the wheel's granularity.
    pub fn arm(self, now: Time, after: Dur) -> (Time, Time) {
        if self.is_exact() {
            return (now + after, now + after);
        }
        let clk = (now.0 + self.offset_ns) / self.tick_ns;
        let delta = after.0.div_ceil(self.tick_ns);
        let mut level = 0;
        while level + 1 < LEVELS && delta >= LEVEL_START << (LEVEL_SHIFT * level) {
            level += 1;
        }
        let shift = LEVEL_SHIFT * level;
        let bucket = (((clk + delta) >> shift) + 1) << shift;
        let at = |tick: u64| {
            Time(
                tick.saturating_mul(self.tick_ns)
                    .saturating_sub(self.offset_ns),
            )
        };
        (at(bucket), at(clk + delta))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const HZ250: Jiffies = Jiffies::hz(250);

    fn ms(n: u64) -> Dur {
        Dur::from_millis(n)
    }

    #[test]
    fn a_timer_is_due_at_jiffies_plus_its_wait_and_runs_at_its_bucket() {
        // 436 ms at 250 Hz from tick 0: 109 ticks, due at 436 ms; the wheel's level 1 (8
        // ticks) runs it at tick 112, 448 ms. What upstream MPTCP reads as the subflow's time
        // left (`icsk_timeout - jiffies`) is the 436, not the 448.
        let now = Time(0);
        assert_eq!(
            HZ250.arm(now, ms(436)),
            (Time(0) + ms(448), Time(0) + ms(436))
        );
        assert_eq!(HZ250.expiry(now, ms(436)), Time(0) + ms(448));
        assert_eq!(
            Jiffies::EXACT.arm(now, ms(436)),
            (now + ms(436), now + ms(436))
        );
    }

    #[test]
    fn exact_timers_run_when_asked() {
        let now = Time(1_234_567);
        assert_eq!(Jiffies::EXACT.expiry(now, ms(260)), now + ms(260));
        assert_eq!(Jiffies::EXACT.round_up(Dur(3)), Dur(3));
        assert_eq!(Jiffies::EXACT.ticks(2), ms(2));
    }

    #[test]
    fn a_short_timer_runs_at_the_tick_after_its_deadline() {
        // Armed 1 ms into jiffy 10 for 2 ticks: expires = 12, bucket 13 (52 ms).
        let now = Time::ZERO + ms(41);
        assert_eq!(HZ250.expiry(now, ms(8)), Time::ZERO + ms(52));
        // A wait of 5 ms is two ticks.
        assert_eq!(HZ250.expiry(now, ms(5)), Time::ZERO + ms(52));
        assert_eq!(HZ250.round_up(ms(5)), ms(8));
        assert_eq!(HZ250.ticks(2), ms(8));
        // Never early, at most two ticks late.
        for start in (0..4_000_000).step_by(333_333) {
            for wait in [1, 999_999, 4_000_000, 100_000_000] {
                let at = HZ250.expiry(Time(start), Dur(wait));
                assert!(at.0 >= start + wait && at.0 <= start + wait + 8_000_000);
            }
        }
    }

    #[test]
    fn far_deadlines_round_up_to_the_outer_levels_ticks() {
        // 250 ticks (the initial RTO, 1 s) from jiffy 0 land in level 1: 8-tick buckets.
        assert_eq!(
            HZ250.expiry(Time::ZERO, Dur::from_secs(1)),
            Time::ZERO + ms(1024)
        );
        // 600 ticks are level 2 (64-tick buckets): bucket 640.
        assert_eq!(HZ250.expiry(Time::ZERO, ms(2400)), Time::ZERO + ms(2560));
    }

    #[test]
    fn the_wheel_rounds_on_the_kernels_own_jiffies() {
        // 600 ticks from jiffy 32 end at jiffy 632: bucket 640, 608 ticks after the start
        // (2.432 s) where from jiffy 0 they take 640 (2.56 s).
        let phased = HZ250.with_phase(ms(4 * 32));
        assert_eq!(phased.expiry(Time::ZERO, ms(2400)), Time::ZERO + ms(2432));
        // A phase within a tick moves the ticks themselves: 1 ms past jiffy 0, a 1-ms timer
        // (1 tick) runs at jiffy 2, 7 ms away rather than 8.
        let sub_tick = HZ250.with_phase(ms(1));
        assert_eq!(sub_tick.expiry(Time::ZERO, ms(1)), Time::ZERO + ms(7));
        assert_eq!(HZ250.expiry(Time::ZERO, ms(1)), Time::ZERO + ms(8));
        // Whole wheel periods change nothing; exact timers ignore a phase.
        let period = Dur(PHASE_PERIOD_TICKS * 4_000_000);
        assert_eq!(HZ250.with_phase(period + ms(128)), phased);
        assert_eq!(Jiffies::EXACT.with_phase(ms(7)), Jiffies::EXACT);
    }

    #[test]
    fn a_backed_off_rto_fires_when_the_kernels_did() {
        // Linux 6.18 at HZ = 250 (`/proc/config.gz`), Wi-Fi failing under a bulk transfer
        // (`scenarios/wifi-outage.toml` through `mpsched emulate`): its retransmissions leave
        // 0.544, 1.056, 2.304 and 4.352 s apart in the capture. An RTO of 65 ticks (260 ms,
        // the model's for that path) doubled at each firing gives the same four gaps; exact
        // timers would give 0.52, 1.04, 2.08 and 4.16 s.
        let rto = ms(260);
        let mut at = Time::ZERO + ms(4 * 1392);
        let mut gaps = vec![];
        for backoff in 1..=4 {
            let next = HZ250.expiry(at, rto * (1 << backoff));
            gaps.push((next.0 - at.0) / 1_000_000);
            at = next;
        }
        assert_eq!(gaps, [544, 1056, 2304, 4352]);
    }
}

//! A subflow sender's timers as one table, as quinn-proto keeps a connection's: one deadline
//! per kind, and the earliest is when the subflow next needs the clock.

use crate::time::{Dur, Time};

/// Linux `TCP_TIMEOUT_MIN_US`: added to the probe timeout with more than one segment out (the
/// reordering timer adds `TCP_TIMEOUT_MIN`, two ticks: `Jiffies::ticks(2)`).
pub const TIMEOUT_MIN: Dur = Dur::from_millis(2);

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Timer {
    /// RACK's reordering timer (RFC 8985 6.3, Linux `ICSK_TIME_REO_TIMEOUT`).
    Reorder,
    /// The tail loss probe (RFC 8985 7.2, Linux `ICSK_TIME_LOSS_PROBE`).
    Tlp,
    /// The retransmission timer (RFC 6298, Linux `ICSK_TIME_RETRANS`).
    Rto,
}

impl Timer {
    const COUNT: usize = 3;

    fn index(self) -> usize {
        self as usize
    }
}

#[derive(Clone, Copy, Debug, Default)]
pub struct TimerTable {
    deadlines: [Option<Time>; Timer::COUNT],
    /// What the kernel records as each timer's deadline (`icsk_timeout`): `jiffies + wait`,
    /// before the timer wheel rounds when it runs (`deadlines`).
    dues: [Option<Time>; Timer::COUNT],
}

impl TimerTable {
    #[inline]
    pub fn get(&self, timer: Timer) -> Option<Time> {
        self.deadlines[timer.index()]
    }

    /// Arms `timer` at `at`, or stops it with `None` (due when it runs).
    #[inline]
    pub fn put(&mut self, timer: Timer, at: Option<Time>) {
        self.put_due(timer, at.map(|t| (t, t)));
    }

    /// Arms `timer` to run at `.0`, recorded as due at `.1`; or stops it with `None`.
    #[inline]
    pub fn put_due(&mut self, timer: Timer, at: Option<(Time, Time)>) {
        self.deadlines[timer.index()] = at.map(|(t, _)| t);
        self.dues[timer.index()] = at.map(|(_, d)| d);
    }

    /// The recorded deadline (`icsk_timeout`) of the timer that runs first.
    pub fn next_due(&self) -> Option<Time> {
        (0..Timer::COUNT)
            .filter_map(|i| self.deadlines[i].zip(self.dues[i]))
            .min()
            .map(|(_, due)| due)
    }

    #[inline]
    pub fn set(&mut self, timer: Timer, at: Time) {
        self.put(timer, Some(at));
    }

    #[inline]
    pub fn stop(&mut self, timer: Timer) {
        self.put(timer, None);
    }

    /// Whether `timer` is armed and due by `now`.
    #[inline]
    pub fn is_due(&self, timer: Timer, now: Time) -> bool {
        self.get(timer).is_some_and(|t| t <= now)
    }

    /// The earliest armed deadline.
    #[inline]
    pub fn next(&self) -> Option<Time> {
        let earlier = |a: Option<Time>, b: Option<Time>| match (a, b) {
            (Some(x), Some(y)) => Some(x.min(y)),
            (x, None) => x,
            (None, y) => y,
        };
        // Unrolled: this runs after every event of the subflow.
        let [a, b, c] = self.deadlines;
        earlier(earlier(a, b), c)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_next_deadline_is_the_earliest_armed_one() {
        let mut t = TimerTable::default();
        assert_eq!(t.next(), None);
        t.set(Timer::Rto, Time(300));
        t.set(Timer::Tlp, Time(200));
        assert_eq!(t.next(), Some(Time(200)));
        t.stop(Timer::Tlp);
        t.put(Timer::Reorder, Some(Time(250)));
        assert_eq!(t.next(), Some(Time(250)));
        assert!(t.is_due(Timer::Reorder, Time(250)) && !t.is_due(Timer::Rto, Time(250)));
        assert_eq!(t.get(Timer::Tlp), None);
    }
}

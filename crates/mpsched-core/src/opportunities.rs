//! Trace-driven link capacity in Mahimahi's format (Netravali et al., USENIX ATC 2015): a
//! list of delivery opportunities, each the chance to send one MTU (1,504 bytes, Mahimahi's
//! `PACKET_SIZE`) at a millisecond of the trace, the list repeating with the period of its
//! last timestamp. As Mahimahi's `LinkQueue` does, an opportunity's bytes go to the packets
//! queued when it comes (several small ones, or part of a large one that finishes at a later
//! opportunity) and what it cannot use is lost; opportunities that pass while the queue is
//! empty are wasted.

use crate::time::{Dur, Time};
use crate::units::Rate;
use std::fmt;
use std::sync::Arc;

/// Bytes one delivery opportunity carries (Mahimahi's `PACKET_SIZE`).
pub const OPPORTUNITY_BYTES: u32 = 1504;

/// A trace refused: why. Displayed as the messages always were; the scenario puts the field
/// (`paths[0].down.trace_ms`) in front.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TraceError {
    /// No timestamp at all.
    Empty,
    /// The last timestamp, the period, is 0 ms.
    ZeroPeriod,
    /// Timestamp `ms` on `line` (counted from 1) comes after the larger `after`.
    Decreasing { line: usize, ms: u64, after: u64 },
}

impl fmt::Display for TraceError {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        match *self {
            TraceError::Empty => f.write_str("a trace needs at least one delivery opportunity"),
            TraceError::ZeroPeriod => {
                f.write_str("a trace's last timestamp must be > 0 ms (it is the period)")
            }
            TraceError::Decreasing { line, ms, after } => write!(
                f,
                "timestamps must not decrease (line {line}: {ms} after {after})"
            ),
        }
    }
}

impl std::error::Error for TraceError {}

/// For the callers whose own errors are still messages.
impl From<TraceError> for String {
    fn from(e: TraceError) -> String {
        e.to_string()
    }
}

/// A trace: opportunity times within one period, and the period.
#[derive(Clone, Debug, PartialEq)]
pub struct Opportunities {
    /// Offsets from the start of a period, non-decreasing (repeats: several in one ms).
    at: Arc<[Dur]>,
    period: Dur,
}

impl Opportunities {
    /// From a Mahimahi trace's timestamps in milliseconds (non-decreasing, the last > 0).
    pub fn from_millis(ms: &[u64]) -> Result<Opportunities, TraceError> {
        let Some(&last) = ms.last() else {
            return Err(TraceError::Empty);
        };
        if last == 0 {
            return Err(TraceError::ZeroPeriod);
        }
        if let Some(i) = ms.windows(2).position(|w| w[1] < w[0]) {
            return Err(TraceError::Decreasing {
                line: i + 2,
                ms: ms[i + 1],
                after: ms[i],
            });
        }
        Ok(Opportunities {
            at: ms.iter().map(|&m| Dur::from_millis(m)).collect(),
            period: Dur::from_millis(last),
        })
    }

    pub fn period(&self) -> Dur {
        self.period
    }

    /// The mean capacity: every opportunity's bytes over one period.
    pub fn mean_rate(&self) -> Rate {
        let bits = self.at.len() as u128 * u128::from(OPPORTUNITY_BYTES) * 8;
        let bps = bits * 1_000_000_000 / u128::from(self.period.as_nanos());
        Rate::bps(bps.max(1) as u64)
    }

    /// The time of opportunity `k` (counted from 0 over the repeating trace).
    fn time(&self, k: u64) -> Time {
        let n = self.at.len() as u64;
        Time::ZERO + Dur(self.period.as_nanos() * (k / n)) + self.at[(k % n) as usize]
    }

    /// The first opportunity at or after `t`.
    fn first_at(&self, t: Time) -> u64 {
        let n = self.at.len() as u64;
        let p = self.period.as_nanos();
        // Offsets lie in [0, period]: a time on a period's boundary is the end of the cycle
        // before (where the trace's last timestamp, the period, falls).
        let cycle = t.as_nanos().saturating_sub(1) / p;
        let off = Dur(t.as_nanos() - cycle * p);
        let i = self.at.partition_point(|&a| a < off) as u64;
        cycle * n + i
    }
}

/// A link's departures: the opportunity it is at, and the bytes left of it.
#[derive(Clone, Debug)]
pub struct OpportunityServer {
    trace: Opportunities,
    current: Option<(u64, u32)>,
}

impl OpportunityServer {
    pub fn new(trace: Opportunities) -> OpportunityServer {
        OpportunityServer {
            trace,
            current: None,
        }
    }

    pub fn trace(&self) -> &Opportunities {
        &self.trace
    }

    /// When a packet of `bytes` that is at the head of the queue from `ready` on has left:
    /// the opportunity that carries its last byte.
    pub fn depart(&mut self, ready: Time, bytes: u32) -> Time {
        // The current opportunity if it has bytes left and has not passed, else the first one
        // from `ready` on.
        let usable = self
            .current
            .filter(|&(k, left)| left > 0 && self.trace.time(k) >= ready);
        let (mut k, mut left) = usable.unwrap_or_else(|| {
            let next = self.current.map_or(0, |(k, _)| k + 1);
            (self.trace.first_at(ready).max(next), OPPORTUNITY_BYTES)
        });
        let mut bytes = bytes;
        while bytes > left {
            bytes -= left;
            k += 1;
            left = OPPORTUNITY_BYTES;
        }
        self.current = Some((k, left - bytes));
        self.trace.time(k)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(m: u64) -> Time {
        Time::ZERO + Dur::from_millis(m)
    }

    #[test]
    fn reads_the_format_and_refuses_what_is_not_it() {
        let t = Opportunities::from_millis(&[1, 1, 3, 4]).unwrap();
        assert_eq!(t.period(), Dur::from_millis(4));
        // 4 x 1504 B in 4 ms: 12.032 Mbit/s.
        assert_eq!(t.mean_rate().bps, 12_032_000);
        assert!(Opportunities::from_millis(&[]).is_err());
        assert!(Opportunities::from_millis(&[0]).is_err());
        let e = Opportunities::from_millis(&[1, 5, 3]).unwrap_err();
        assert!(e.to_string().contains("line 3"), "{e}");
    }

    /// Each refusal is its variant, displayed as the message it always was.
    #[test]
    fn refusals_are_typed_and_say_why() {
        assert_eq!(Opportunities::from_millis(&[]), Err(TraceError::Empty));
        assert_eq!(
            TraceError::Empty.to_string(),
            "a trace needs at least one delivery opportunity"
        );
        let e = Opportunities::from_millis(&[3, 0]).unwrap_err();
        assert_eq!(e, TraceError::ZeroPeriod);
        assert_eq!(
            e.to_string(),
            "a trace's last timestamp must be > 0 ms (it is the period)"
        );
        let e = Opportunities::from_millis(&[1, 5, 3]).unwrap_err();
        assert_eq!(
            e,
            TraceError::Decreasing {
                line: 3,
                ms: 3,
                after: 5
            }
        );
        assert_eq!(
            String::from(e),
            "timestamps must not decrease (line 3: 3 after 5)"
        );
    }

    #[test]
    fn packets_use_opportunities_as_mahimahi_does() {
        let mut s = OpportunityServer::new(Opportunities::from_millis(&[1, 1, 3, 4]).unwrap());
        // Two 700-byte packets share the first opportunity (1 ms); a 1500-byte one takes the
        // rest of it and ends in the second (also at 1 ms).
        assert_eq!(s.depart(ms(0), 700), ms(1));
        assert_eq!(s.depart(ms(0), 700), ms(1));
        assert_eq!(s.depart(ms(0), 1500), ms(1));
        // What is left of the second opportunity (104 + 1504 - 1500 = 108 B) is not enough.
        assert_eq!(s.depart(ms(1), 1500), ms(3));
        // Opportunities that passed while the queue was empty are lost: the trace repeats
        // every 4 ms, the next after 6 ms is at 4 + 3 = 7 ms.
        assert_eq!(s.depart(ms(6), 100), ms(7));
        assert_eq!(s.depart(ms(6), 100), ms(7));
        // A packet ready exactly at an opportunity takes it.
        assert_eq!(s.depart(ms(8), 100), ms(8));
        assert_eq!(s.depart(ms(9), 100), ms(9));
    }

    #[test]
    fn a_saturated_constant_trace_carries_its_mean_rate() {
        // One opportunity every ms: 12.032 Mbit/s; 1500-byte packets back to back for 10 s.
        let ms_list: Vec<u64> = (1..=1000).collect();
        let mut s = OpportunityServer::new(Opportunities::from_millis(&ms_list).unwrap());
        let (mut t, mut bytes) = (Time::ZERO, 0u64);
        while t < ms(10_000) {
            t = s.depart(t, 1500);
            bytes += 1500;
        }
        let rate = bytes as f64 * 8.0 / t.as_secs_f64();
        assert!((rate / 12.032e6 - 1.0).abs() < 0.001, "{rate}");
    }
}

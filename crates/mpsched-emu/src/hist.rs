//! A histogram of release lateness with 1 us buckets (exact max, mean and count).

use serde::Serialize;

/// Lateness above this many microseconds is counted in the last bucket (the max stays exact).
const BUCKETS: usize = 50_000;

#[derive(Clone, Debug)]
pub struct Hist {
    buckets: Vec<u64>,
    count: u64,
    sum_ns: u128,
    max_ns: u64,
}

/// Quantiles in microseconds. A quantile is the upper edge of its 1 us bucket.
#[derive(Clone, Copy, Debug, Default, Serialize, PartialEq)]
pub struct Lateness {
    pub count: u64,
    pub mean_us: f64,
    pub p50_us: f64,
    pub p99_us: f64,
    pub p999_us: f64,
    pub max_us: f64,
}

impl Default for Hist {
    fn default() -> Self {
        Hist {
            buckets: vec![0; BUCKETS],
            count: 0,
            sum_ns: 0,
            max_ns: 0,
        }
    }
}

impl Hist {
    pub fn add(&mut self, ns: u64) {
        let b = ((ns / 1000) as usize).min(BUCKETS - 1);
        self.buckets[b] += 1;
        self.count += 1;
        self.sum_ns += ns as u128;
        self.max_ns = self.max_ns.max(ns);
    }

    pub fn merge(&mut self, other: &Hist) {
        for (a, b) in self.buckets.iter_mut().zip(&other.buckets) {
            *a += b;
        }
        self.count += other.count;
        self.sum_ns += other.sum_ns;
        self.max_ns = self.max_ns.max(other.max_ns);
    }

    fn quantile_us(&self, q: f64) -> f64 {
        if self.count == 0 {
            return 0.0;
        }
        let rank = ((q * self.count as f64).ceil() as u64).clamp(1, self.count);
        let mut seen = 0;
        for (i, &n) in self.buckets.iter().enumerate() {
            seen += n;
            if seen >= rank {
                let edge = (i + 1) as f64;
                return edge.min(self.max_ns as f64 / 1000.0);
            }
        }
        self.max_ns as f64 / 1000.0
    }

    pub fn summary(&self) -> Lateness {
        Lateness {
            count: self.count,
            mean_us: if self.count == 0 {
                0.0
            } else {
                self.sum_ns as f64 / self.count as f64 / 1000.0
            },
            p50_us: self.quantile_us(0.5),
            p99_us: self.quantile_us(0.99),
            p999_us: self.quantile_us(0.999),
            max_us: self.max_ns as f64 / 1000.0,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantiles() {
        let mut h = Hist::default();
        for us in 0..1000u64 {
            h.add(us * 1000 + 500);
        }
        h.add(200_000_000); // 200 ms: beyond the buckets, the max stays exact
        let s = h.summary();
        assert_eq!(s.count, 1001);
        assert_eq!(s.p50_us, 501.0);
        assert_eq!(s.p99_us, 991.0);
        assert_eq!(s.max_us, 200_000.0);
        let mut g = Hist::default();
        g.merge(&h);
        assert_eq!(g.summary(), s);
        assert_eq!(Hist::default().summary().p99_us, 0.0);
    }
}

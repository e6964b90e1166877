//! Fixed-memory statistics: a log-linear histogram for delays and step sizes, so that a run's
//! memory does not grow with its length.

/// A histogram of non-negative integers with 2^-SUB_BITS relative precision: values below
/// 2^SUB_BITS are exact, larger ones fall in buckets of width 2^(e - SUB_BITS).
#[derive(Clone, Debug)]
pub struct Histogram {
    counts: Vec<u64>,
    n: u64,
    sum: u128,
    max: u64,
}

const SUB_BITS: u32 = 7;
const SUB: u64 = 1 << SUB_BITS;

impl Default for Histogram {
    fn default() -> Self {
        Self::new()
    }
}

impl Histogram {
    pub fn new() -> Histogram {
        Histogram {
            counts: vec![0; ((64 - SUB_BITS as usize) + 1) * SUB as usize],
            n: 0,
            sum: 0,
            max: 0,
        }
    }

    fn index(v: u64) -> usize {
        if v < SUB {
            return v as usize;
        }
        let e = 63 - v.leading_zeros(); // >= SUB_BITS
        let shift = e - SUB_BITS;
        let mant = (v >> shift) - SUB; // in [0, SUB)
        ((shift as u64 + 1) * SUB + mant) as usize
    }

    /// The midpoint of bucket `i`'s range.
    fn value(i: usize) -> u64 {
        let i = i as u64;
        if i < SUB {
            return i;
        }
        let shift = i / SUB - 1;
        let mant = i % SUB + SUB;
        let lo = mant << shift;
        lo + ((1u64 << shift) >> 1)
    }

    pub fn record(&mut self, v: u64) {
        self.counts[Self::index(v)] += 1;
        self.n += 1;
        self.sum += v as u128;
        self.max = self.max.max(v);
    }

    pub fn count(&self) -> u64 {
        self.n
    }
    pub fn max(&self) -> u64 {
        self.max
    }
    pub fn mean(&self) -> f64 {
        if self.n == 0 {
            0.0
        } else {
            self.sum as f64 / self.n as f64
        }
    }

    /// The q-quantile (0..=1), within the bucket precision; exact for values below 128.
    pub fn quantile(&self, q: f64) -> u64 {
        if self.n == 0 {
            return 0;
        }
        let rank = ((q * self.n as f64).ceil() as u64).clamp(1, self.n);
        let mut seen = 0;
        for (i, &c) in self.counts.iter().enumerate() {
            seen += c;
            if seen >= rank {
                return Self::value(i).min(self.max);
            }
        }
        self.max
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exact_below_128_and_within_one_percent_above() {
        let mut h = Histogram::new();
        for v in 0..100 {
            h.record(v);
        }
        assert_eq!(h.quantile(0.5), 49);
        assert_eq!(h.quantile(1.0), 99);
        let mut h = Histogram::new();
        for v in 1..=1_000_000u64 {
            h.record(v * 1000);
        }
        let p99 = h.quantile(0.99) as f64;
        assert!((p99 / 990_000_000.0 - 1.0).abs() < 0.01, "{p99}");
        assert_eq!(h.mean(), 500_000_500.0);
        assert_eq!(h.max(), 1_000_000_000);
    }

    #[test]
    fn zero_is_exact() {
        let mut h = Histogram::new();
        for _ in 0..10 {
            h.record(0);
        }
        h.record(5_000_000);
        assert_eq!(h.quantile(0.5), 0);
        assert_eq!(h.quantile(0.9), 0);
    }
}

//! Constant-memory summary statistics for nanosecond quantities: running
//! moments (Welford, 1962; as in Knuth TAOCP vol. 2, 4.2.2) and a
//! log-linear histogram for percentiles (the HdrHistogram idea: power-of-two
//! groups split into 2^SUB_BITS equal sub-buckets). Values below 2^SUB_BITS
//! are exact; above, a bucket spans at most 1/2^SUB_BITS = 1/128 of its
//! lower bound, so a reported percentile (the bucket's midpoint, clamped to
//! the observed min/max) is within 0.4 % of a value of that rank.
//! (drivelab-stats will provide the shared LatencyHistogram; this one is
//! private to the trace crate until then.)

use serde::{Deserialize, Serialize};

const SUB_BITS: u32 = 7;
const SUB: u64 = 1 << SUB_BITS;
const GROUPS: usize = 64 - SUB_BITS as usize + 1;

/// Summary of a distribution in nanoseconds. Fields are `null` (None) when
/// no value was recorded.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    /// Number of values.
    pub count: u64,
    /// Arithmetic mean, ns.
    pub mean: Option<f64>,
    /// Smallest value, ns.
    pub min: Option<u64>,
    /// Largest value, ns.
    pub max: Option<u64>,
    /// Median, ns (histogram estimate, ±0.4 %).
    pub p50: Option<u64>,
    /// 90th percentile, ns.
    pub p90: Option<u64>,
    /// 99th percentile, ns.
    pub p99: Option<u64>,
    /// Population standard deviation, ns.
    pub stddev: Option<f64>,
}

/// Log-linear histogram plus running moments.
#[derive(Clone)]
pub(crate) struct LogHist {
    counts: Vec<u64>,
    n: u64,
    mean: f64,
    m2: f64,
    min: u64,
    max: u64,
}

impl Default for LogHist {
    fn default() -> Self {
        Self::new()
    }
}

fn index(v: u64) -> usize {
    if v < SUB {
        return v as usize;
    }
    let k = 63 - v.leading_zeros(); // >= SUB_BITS
    let group = (k - SUB_BITS + 1) as usize;
    let sub = ((v >> (k - SUB_BITS)) & (SUB - 1)) as usize;
    group * SUB as usize + sub
}

/// [lower, upper) of bucket `i`.
fn bounds(i: usize) -> (u64, u64) {
    let group = i / SUB as usize;
    let sub = (i % SUB as usize) as u64;
    if group == 0 {
        return (sub, sub + 1);
    }
    let shift = group as u32 - 1;
    let lo = (SUB + sub) << shift;
    let width = 1u64 << shift;
    (lo, lo.saturating_add(width))
}

impl LogHist {
    pub(crate) fn new() -> Self {
        LogHist {
            counts: vec![0; GROUPS * SUB as usize],
            n: 0,
            mean: 0.0,
            m2: 0.0,
            min: u64::MAX,
            max: 0,
        }
    }

    pub(crate) fn record(&mut self, v: u64) {
        self.counts[index(v)] += 1;
        self.n += 1;
        let x = v as f64;
        let d = x - self.mean;
        self.mean += d / self.n as f64;
        self.m2 += d * (x - self.mean);
        self.min = self.min.min(v);
        self.max = self.max.max(v);
    }

    pub(crate) fn mean(&self) -> Option<f64> {
        (self.n > 0).then_some(self.mean)
    }

    /// The smallest and the largest value recorded.
    pub(crate) fn range(&self) -> Option<(u64, u64)> {
        (self.n > 0).then_some((self.min, self.max))
    }

    /// Value at quantile `q` in [0, 1].
    pub(crate) fn quantile(&self, q: f64) -> Option<u64> {
        if self.n == 0 {
            return None;
        }
        let rank = ((q * self.n as f64).ceil() as u64).clamp(1, self.n);
        let mut seen = 0;
        for (i, c) in self.counts.iter().enumerate() {
            seen += c;
            if seen >= rank {
                let (lo, hi) = bounds(i);
                let mid = lo + (hi - lo - 1) / 2;
                return Some(mid.clamp(self.min, self.max));
            }
        }
        Some(self.max)
    }

    pub(crate) fn summary(&self) -> Summary {
        if self.n == 0 {
            return Summary::default();
        }
        Summary {
            count: self.n,
            mean: Some(self.mean),
            min: Some(self.min),
            max: Some(self.max),
            p50: self.quantile(0.5),
            p90: self.quantile(0.9),
            p99: self.quantile(0.99),
            stddev: Some((self.m2 / self.n as f64).sqrt()),
        }
    }

    /// Counts folded into power-of-two buckets: (lower bound, count), 0
    /// first, for plots and distribution distances.
    pub(crate) fn log2_buckets(&self) -> Vec<(u64, u64)> {
        let mut out: Vec<(u64, u64)> = Vec::new();
        for (i, c) in self.counts.iter().enumerate() {
            if *c == 0 {
                continue;
            }
            let lo = bounds(i).0;
            let b = if lo == 0 {
                0
            } else {
                1u64 << (63 - lo.leading_zeros())
            };
            match out.last_mut() {
                Some((k, n)) if *k == b => *n += c,
                _ => out.push((b, *c)),
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_tile_the_range() {
        let mut prev_hi = 0;
        for i in 0..GROUPS * SUB as usize - 1 {
            let (lo, hi) = bounds(i);
            assert_eq!(lo, prev_hi, "bucket {i}");
            assert!(hi > lo);
            assert_eq!(index(lo), i);
            assert_eq!(index(hi - 1), i);
            prev_hi = hi;
        }
        assert_eq!(index(u64::MAX), GROUPS * SUB as usize - 1);
    }

    #[test]
    fn percentiles_against_sorted_reference() {
        // 1..=100_000 scaled: the exact p-th value is known.
        let mut h = LogHist::new();
        let vals: Vec<u64> = (1..=100_000u64).map(|i| i * 37).collect();
        for v in &vals {
            h.record(*v);
        }
        for q in [0.5, 0.9, 0.99] {
            let exact = vals[((q * vals.len() as f64).ceil() as usize) - 1] as f64;
            let got = h.quantile(q).unwrap() as f64;
            assert!(
                (got - exact).abs() / exact < 0.004,
                "q={q} got {got} exact {exact}"
            );
        }
        let s = h.summary();
        let mean = vals.iter().sum::<u64>() as f64 / vals.len() as f64;
        assert!((s.mean.unwrap() - mean).abs() < 1e-6 * mean);
        let var = vals.iter().map(|v| (*v as f64 - mean).powi(2)).sum::<f64>() / vals.len() as f64;
        assert!((s.stddev.unwrap() - var.sqrt()).abs() < 1e-6 * var.sqrt());
        assert_eq!((s.min, s.max), (Some(37), Some(3_700_000)));
    }

    #[test]
    fn empty_summary_is_all_none() {
        let s = LogHist::new().summary();
        assert_eq!(s.count, 0);
        assert!(s.mean.is_none() && s.p50.is_none());
    }
}

//! Running mean and variance in constant memory, mergeable across jobs.
//!
//! It exists for the figures reported as `mean` and `stddev` (completion
//! latency, per-second bandwidth and IOPS samples, DMM command times)
//! without keeping the samples. Recording is Welford's update (B. P.
//! Welford, "Note on a method for calculating corrected sums of squares and
//! products", Technometrics 4(3), 1962), as in fio's `add_stat_sample`;
//! merging is the pairwise formula of Chan, Golub and LeVeque ("Updating
//! formulae and a pairwise algorithm for computing sample variances",
//! Stanford STAN-CS-79-773, 1979), as in fio's `sum_stat`.
//!
//! The standard deviation is the *sample* one (divisor `n - 1`), and 0 for
//! fewer than two samples, because that is what fio reports (stat.c
//! `calc_lat`: `sqrt(S / (n - 1))`). [`Welford::population_stddev`] gives
//! the divisor-`n` figure.

use serde::{Deserialize, Serialize};

/// Running count, mean, sum of squared deviations (`m2`), min and max of
/// `f64` samples.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Welford {
    count: u64,
    mean: f64,
    m2: f64,
    min: f64,
    max: f64,
}

/// The five figures reported for a sample set (fio's `min`, `max`,
/// `mean`, `stddev` and sample count), in the unit of the samples.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Summary {
    /// Smallest sample; 0 when there are none.
    pub min: f64,
    /// Largest sample; 0 when there are none.
    pub max: f64,
    /// Arithmetic mean; 0 when there are none.
    pub mean: f64,
    /// Sample standard deviation (divisor `n - 1`, as fio); 0 for fewer
    /// than two samples.
    pub stddev: f64,
    /// Number of samples.
    pub count: u64,
}

impl Welford {
    /// No samples.
    pub const fn new() -> Self {
        Welford {
            count: 0,
            mean: 0.0,
            m2: 0.0,
            min: f64::INFINITY,
            max: f64::NEG_INFINITY,
        }
    }

    /// Adds one sample.
    #[inline]
    pub fn record(&mut self, x: f64) {
        self.count += 1;
        // The reciprocal depends only on the count, which keeps the division
        // off the mean's dependency chain: 5.7 ns per record instead of
        // 12.5-17 ns with `delta / count` (benches/record.rs, release).
        let inv = 1.0 / self.count as f64;
        let delta = x - self.mean;
        self.mean += delta * inv;
        self.m2 += delta * (x - self.mean);
        self.min = self.min.min(x);
        self.max = self.max.max(x);
    }

    /// Adds every sample of `other` (Chan et al.); the result equals, up to
    /// rounding, one accumulator that saw both streams.
    pub fn merge(&mut self, other: &Welford) {
        if other.count == 0 {
            return;
        }
        if self.count == 0 {
            *self = *other;
            return;
        }
        let (na, nb) = (self.count as f64, other.count as f64);
        let n = na + nb;
        let delta = other.mean - self.mean;
        self.mean += delta * nb / n;
        self.m2 += other.m2 + delta * delta * na * nb / n;
        self.count += other.count;
        self.min = self.min.min(other.min);
        self.max = self.max.max(other.max);
    }

    /// Number of samples.
    pub fn count(&self) -> u64 {
        self.count
    }

    /// Mean; 0 when empty.
    pub fn mean(&self) -> f64 {
        self.mean
    }

    /// Smallest sample; `None` when empty.
    pub fn min(&self) -> Option<f64> {
        (self.count > 0).then_some(self.min)
    }

    /// Largest sample; `None` when empty.
    pub fn max(&self) -> Option<f64> {
        (self.count > 0).then_some(self.max)
    }

    /// Sample variance (divisor `n - 1`, as fio); 0 for fewer than two samples.
    pub fn variance(&self) -> f64 {
        if self.count < 2 {
            0.0
        } else {
            self.m2 / (self.count - 1) as f64
        }
    }

    /// Sample standard deviation (divisor `n - 1`, as fio); 0 for fewer
    /// than two samples.
    pub fn stddev(&self) -> f64 {
        self.variance().sqrt()
    }

    /// Population standard deviation (divisor `n`); 0 when empty.
    pub fn population_stddev(&self) -> f64 {
        if self.count == 0 {
            0.0
        } else {
            (self.m2 / self.count as f64).sqrt()
        }
    }

    /// The reported figures; all zero when empty.
    pub fn summary(&self) -> Summary {
        Summary {
            min: self.min().unwrap_or(0.0),
            max: self.max().unwrap_or(0.0),
            mean: self.mean,
            stddev: self.stddev(),
            count: self.count,
        }
    }
}

impl Default for Welford {
    fn default() -> Self {
        Self::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Two-pass reference: mean first, then the sum of squared deviations.
    fn two_pass(data: &[f64]) -> (f64, f64) {
        let n = data.len() as f64;
        let mean = data.iter().sum::<f64>() / n;
        let ss: f64 = data.iter().map(|x| (x - mean) * (x - mean)).sum();
        (mean, ss / (n - 1.0))
    }

    fn close(a: f64, b: f64, rel: f64) -> bool {
        (a - b).abs() <= rel * b.abs().max(1e-300)
    }

    fn data() -> Vec<f64> {
        // Latency-like values with a large offset, the case where the
        // textbook sum-of-squares formula loses its digits.
        let mut x = 0x2545_F491_4F6C_DD1Du64;
        (0..100_001)
            .map(|i| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                1e9 + (x % 100_000) as f64 + (i % 7) as f64 * 0.25
            })
            .collect()
    }

    #[test]
    fn matches_two_pass_mean_and_variance() {
        let d = data();
        let mut w = Welford::new();
        for &x in &d {
            w.record(x);
        }
        let (mean, var) = two_pass(&d);
        assert!(close(w.mean(), mean, 1e-12), "{} vs {mean}", w.mean());
        assert!(close(w.variance(), var, 1e-9), "{} vs {var}", w.variance());
        assert!(close(w.stddev(), var.sqrt(), 1e-9));
        let n = d.len() as f64;
        assert!(close(
            w.population_stddev(),
            (var * (n - 1.0) / n).sqrt(),
            1e-9
        ));
        let min = d.iter().cloned().fold(f64::INFINITY, f64::min);
        let max = d.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
        assert_eq!(w.min(), Some(min));
        assert_eq!(w.max(), Some(max));
    }

    #[test]
    fn small_reference_set() {
        // 2, 4, 4, 4, 5, 5, 7, 9: mean 5, population variance 4, sample 32/7.
        let mut w = Welford::new();
        for x in [2.0, 4.0, 4.0, 4.0, 5.0, 5.0, 7.0, 9.0] {
            w.record(x);
        }
        assert!(close(w.mean(), 5.0, 1e-15));
        assert!(close(w.population_stddev(), 2.0, 1e-15));
        assert!(close(w.variance(), 32.0 / 7.0, 1e-15));
    }

    #[test]
    fn merge_of_split_parts_equals_the_whole() {
        let d = data();
        let mut whole = Welford::new();
        for &x in &d {
            whole.record(x);
        }
        for split in [0, 1, 2, d.len() / 2, d.len() - 1, d.len()] {
            let (mut a, mut b) = (Welford::new(), Welford::new());
            d[..split].iter().for_each(|&x| a.record(x));
            d[split..].iter().for_each(|&x| b.record(x));
            a.merge(&b);
            assert_eq!(a.count(), whole.count(), "split {split}");
            assert!(close(a.mean(), whole.mean(), 1e-12), "split {split}");
            assert!(close(a.variance(), whole.variance(), 1e-9), "split {split}");
            assert_eq!(a.min(), whole.min());
            assert_eq!(a.max(), whole.max());
        }
    }

    #[test]
    fn fewer_than_two_samples_have_zero_stddev() {
        let mut w = Welford::new();
        assert_eq!(
            w.summary(),
            Summary {
                min: 0.0,
                max: 0.0,
                mean: 0.0,
                stddev: 0.0,
                count: 0
            }
        );
        assert_eq!(w.min(), None);
        w.record(42.0);
        assert_eq!(w.stddev(), 0.0);
        assert_eq!(
            w.summary(),
            Summary {
                min: 42.0,
                max: 42.0,
                mean: 42.0,
                stddev: 0.0,
                count: 1
            }
        );
    }

    #[test]
    fn summary_serializes_with_its_field_names() {
        let mut w = Welford::new();
        w.record(1.0);
        w.record(3.0);
        let v: serde_json::Value = serde_json::to_value(w.summary()).unwrap();
        assert_eq!(v["min"], 1.0);
        assert_eq!(v["max"], 3.0);
        assert_eq!(v["mean"], 2.0);
        assert_eq!(v["count"], 2);
        assert!(close(v["stddev"].as_f64().unwrap(), 2f64.sqrt(), 1e-15));
        let back: Summary = serde_json::from_value(v).unwrap();
        assert_eq!(back, w.summary());
    }
}

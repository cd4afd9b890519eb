//! The run-wide latency histogram: one per job and direction, recorded on
//! every completion, merged per job by addition.
//!
//! It exists because storing every latency costs memory in proportion to the
//! I/O count, while a log-linear histogram holds any number of samples in a
//! fixed 39 KiB with a known error. The bucketing is HdrHistogram's
//! (Gil Tene, <https://hdrhistogram.org>), as fio uses it in stat.c
//! (`plat_val_to_idx`): 128 sub-buckets per power of two, values below 256 ns
//! exact. A bucket's midpoint is within [`RELATIVE_ERROR`] (1/256, 0.39 %)
//! of every value in the bucket, so every percentile is within that
//! fraction of the true order statistic.
//!
//! Percentiles use fio's rank rule: the `p`-th percentile of `N` samples is
//! the `ceil(p / 100 * N)`-th smallest (at least the 1st), reported as the
//! midpoint of the bucket that holds it, as fio's `calc_clat_percentiles`
//! and `plat_idx_to_val` do. Two differences from fio, both only making the
//! answer closer to the truth: the midpoint is clamped into the exact
//! `[min, max]`, and `p = 0` gives the minimum's bucket (fio gives bucket 0).

use crate::loglinear::{bucket_count, bucket_low_width, index, rank, representative, MAX_BITS};

/// Sub-bucket bits: `2^7 = 128` linear sub-buckets per power of two.
const SUB_BITS: u32 = 7;

/// Number of buckets (4992; 39 KiB of `u64` counts).
const BUCKETS: usize = bucket_count(SUB_BITS);

/// Largest latency, in ns, recorded without clamping: `2^45 - 1` ns, about
/// 9.77 hours. Larger values are counted in the last bucket; `max()` still
/// reports them exactly, so `max() > HIGHEST_TRACKABLE_NS` tells that it
/// happened.
pub const HIGHEST_TRACKABLE_NS: u64 = (1u64 << MAX_BITS) - 1;

/// Upper bound on `|reported - true| / true` for any percentile or bucket
/// midpoint: `1/256` (0.39 %). Values below 256 ns are exact.
pub const RELATIVE_ERROR: f64 = 1.0 / 256.0;

/// fio's default `percentile_list`, in percent.
pub const FIO_DEFAULT_PERCENTILES: [f64; 17] = [
    1.0, 5.0, 10.0, 20.0, 30.0, 40.0, 50.0, 60.0, 70.0, 80.0, 90.0, 95.0, 99.0, 99.5, 99.9, 99.95,
    99.99,
];

/// A log-linear histogram of nanosecond latencies with exact count, sum,
/// min and max.
///
/// Allocated once by [`LatencyHistogram::new`]; recording never allocates.
#[derive(Clone, PartialEq, Eq)]
pub struct LatencyHistogram {
    counts: Box<[u64; BUCKETS]>,
    count: u64,
    sum: u128,
    min: u64,
    max: u64,
}

/// One non-empty bucket, for plots: the samples it counts lie in
/// `low_ns..=high_ns`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Bucket {
    /// Smallest value of the bucket, ns.
    pub low_ns: u64,
    /// Largest value of the bucket, ns (inclusive). The last bucket also
    /// holds every clamped value above [`HIGHEST_TRACKABLE_NS`].
    pub high_ns: u64,
    /// Number of samples in the bucket.
    pub count: u64,
}

impl LatencyHistogram {
    /// An empty histogram (allocates its 39 KiB of buckets here, once).
    pub fn new() -> Self {
        let counts: Box<[u64; BUCKETS]> = match vec![0u64; BUCKETS].into_boxed_slice().try_into() {
            Ok(array) => array,
            Err(_) => unreachable!("vec![0; BUCKETS] has BUCKETS elements"),
        };
        LatencyHistogram {
            counts,
            count: 0,
            sum: 0,
            min: u64::MAX,
            max: 0,
        }
    }

    /// Records one latency of `v` ns.
    #[inline]
    pub fn record(&mut self, v: u64) {
        self.counts[index(v, SUB_BITS, BUCKETS)] += 1;
        self.count += 1;
        self.sum += u128::from(v);
        self.min = self.min.min(v);
        self.max = self.max.max(v);
    }

    /// Records `n` latencies of `v` ns each (`n = 0` records nothing).
    #[inline]
    pub fn record_n(&mut self, v: u64, n: u64) {
        if n == 0 {
            return;
        }
        self.counts[index(v, SUB_BITS, BUCKETS)] += n;
        self.count += n;
        self.sum += u128::from(v) * u128::from(n);
        self.min = self.min.min(v);
        self.max = self.max.max(v);
    }

    /// Adds every sample of `other` to `self` (per-job → total). The result
    /// equals one histogram that recorded both streams.
    pub fn merge(&mut self, other: &LatencyHistogram) {
        for (a, b) in self.counts.iter_mut().zip(other.counts.iter()) {
            *a += *b;
        }
        self.count += other.count;
        self.sum += other.sum;
        self.min = self.min.min(other.min);
        self.max = self.max.max(other.max);
    }

    /// Forgets every sample; keeps the allocation.
    pub fn reset(&mut self) {
        self.counts.fill(0);
        self.count = 0;
        self.sum = 0;
        self.min = u64::MAX;
        self.max = 0;
    }

    /// Number of samples recorded.
    pub fn count(&self) -> u64 {
        self.count
    }

    /// Exact sum of all samples, ns.
    pub fn sum(&self) -> u128 {
        self.sum
    }

    /// Exact smallest sample, ns; `None` when empty.
    pub fn min(&self) -> Option<u64> {
        (self.count > 0).then_some(self.min)
    }

    /// Exact largest sample, ns (even above [`HIGHEST_TRACKABLE_NS`]);
    /// `None` when empty.
    pub fn max(&self) -> Option<u64> {
        (self.count > 0).then_some(self.max)
    }

    /// Exact arithmetic mean, ns (from the exact sum); `None` when empty.
    pub fn mean(&self) -> Option<f64> {
        (self.count > 0).then(|| self.sum as f64 / self.count as f64)
    }

    /// The `p`-th percentile (`p` in percent, `0.0..=100.0`), ns, within
    /// [`RELATIVE_ERROR`] of the `ceil(p / 100 * count)`-th smallest sample
    /// (fio's rank; see the module doc). `None` when empty or when `p` is
    /// NaN or outside `0..=100`.
    pub fn percentile(&self, p: f64) -> Option<u64> {
        if self.count == 0 || !(0.0..=100.0).contains(&p) {
            return None;
        }
        let target = rank(p, self.count);
        let mut cumulative = 0u64;
        for (i, &c) in self.counts.iter().enumerate() {
            cumulative += c;
            if cumulative >= target {
                return Some(self.bucket_value(i));
            }
        }
        // Not reached: the bucket counts sum to `count`, so the loop returns
        // at the last non-empty bucket at the latest.
        Some(self.max)
    }

    /// Several percentiles in one pass: `(p, value_ns)` in the order given.
    /// Entries with `p` NaN or outside `0..=100` are left out; an empty
    /// histogram gives an empty list.
    pub fn percentiles(&self, ps: &[f64]) -> Vec<(f64, u64)> {
        if self.count == 0 {
            return Vec::new();
        }
        let mut wanted: Vec<(usize, u64)> = ps
            .iter()
            .enumerate()
            .filter(|(_, p)| (0.0..=100.0).contains(*p))
            .map(|(at, &p)| (at, rank(p, self.count)))
            .collect();
        wanted.sort_by_key(|&(_, r)| r);
        let mut values = vec![0u64; ps.len()];
        let mut next = 0;
        let mut cumulative = 0u64;
        for (i, &c) in self.counts.iter().enumerate() {
            if next == wanted.len() {
                break;
            }
            cumulative += c;
            while next < wanted.len() && cumulative >= wanted[next].1 {
                values[wanted[next].0] = self.bucket_value(i);
                next += 1;
            }
        }
        wanted.sort_by_key(|&(at, _)| at);
        wanted.iter().map(|&(at, _)| (ps[at], values[at])).collect()
    }

    /// The non-empty buckets in increasing order of value.
    pub fn buckets(&self) -> impl Iterator<Item = Bucket> + '_ {
        self.counts
            .iter()
            .enumerate()
            .filter(|(_, &c)| c > 0)
            .map(|(i, &count)| {
                let (low, width) = bucket_low_width(i, SUB_BITS);
                Bucket {
                    low_ns: low,
                    high_ns: low + (width - 1),
                    count,
                }
            })
    }

    /// Each bucket's count and the value a percentile reports for it
    /// (its midpoint clamped into the exact `[min, max]`; 0 for an empty
    /// bucket), in increasing order, empty buckets included: two
    /// histograms line up bucket by bucket.
    pub(crate) fn counts_valued(&self) -> impl Iterator<Item = (u64, u64)> + '_ {
        self.counts
            .iter()
            .enumerate()
            .map(|(i, &c)| (c, if c > 0 { self.bucket_value(i) } else { 0 }))
    }

    /// Midpoint of bucket `i`, clamped into the exact `[min, max]`.
    fn bucket_value(&self, i: usize) -> u64 {
        representative(i, SUB_BITS).clamp(self.min, self.max)
    }
}

impl Default for LatencyHistogram {
    fn default() -> Self {
        Self::new()
    }
}

impl std::fmt::Debug for LatencyHistogram {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LatencyHistogram")
            .field("count", &self.count)
            .field("min", &self.min())
            .field("max", &self.max())
            .field("mean", &self.mean())
            .field("non_empty_buckets", &self.buckets().count())
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// splitmix64: a small, well-known generator, enough for test data.
    struct Rng(u64);
    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
            let mut z = self.0;
            z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
            z ^ (z >> 31)
        }
        /// Uniform in [0, 1).
        fn unit(&mut self) -> f64 {
            (self.next() >> 11) as f64 / (1u64 << 53) as f64
        }
        /// Log-uniform integer in [1, hi].
        fn log_uniform(&mut self, hi: f64) -> u64 {
            ((self.unit() * hi.ln()).exp() as u64).max(1)
        }
    }

    /// `n` samples natively; `n / 100` under Miri (tests/miri), which
    /// interprets each record about 10^5 times slower and checks the same
    /// code paths.
    const fn samples(n: usize) -> usize {
        if cfg!(miri) {
            n / 100
        } else {
            n
        }
    }

    /// The exact percentile from a sorted array, with the rank computed in
    /// integers from `p` in hundredths of a percent.
    fn exact(sorted: &[u64], p_hundredths: u64) -> u64 {
        let n = sorted.len() as u64;
        let r = (p_hundredths * n).div_ceil(10_000).max(1);
        sorted[(r - 1) as usize]
    }

    fn assert_within_bound(got: u64, truth: u64, what: &str) {
        let err = (got as f64 - truth as f64).abs();
        assert!(
            err <= truth as f64 * RELATIVE_ERROR,
            "{what}: got {got}, true {truth}, relative error {}",
            err / truth as f64
        );
    }

    const LIST_HUNDREDTHS: [u64; 17] = [
        100, 500, 1000, 2000, 3000, 4000, 5000, 6000, 7000, 8000, 9000, 9500, 9900, 9950, 9990,
        9995, 9999,
    ];

    #[test]
    fn default_list_matches_the_table_in_hundredths() {
        for (p, h) in FIO_DEFAULT_PERCENTILES.iter().zip(LIST_HUNDREDTHS) {
            assert_eq!((p * 100.0).round() as u64, h);
        }
    }

    #[test]
    fn percentiles_of_1_to_100000_match_the_sorted_array() {
        let n = samples(100_000) as u64;
        let mut h = LatencyHistogram::new();
        let data: Vec<u64> = (1..=n).collect();
        for &v in &data {
            h.record(v);
        }
        for (&p, &ph) in FIO_DEFAULT_PERCENTILES.iter().zip(&LIST_HUNDREDTHS) {
            let truth = exact(&data, ph);
            assert_within_bound(h.percentile(p).unwrap(), truth, &format!("p{p}"));
        }
        // The one-pass list agrees with the single look-ups, in input order.
        let mut shuffled = FIO_DEFAULT_PERCENTILES.to_vec();
        shuffled.reverse();
        for (p, v) in h.percentiles(&shuffled) {
            assert_eq!(Some(v), h.percentile(p), "p{p}");
        }
        assert_eq!(h.percentiles(&shuffled).len(), shuffled.len());
        assert_eq!(h.count(), n);
        assert_eq!(h.sum(), u128::from(n) * u128::from(n + 1) / 2);
        assert_eq!(h.min(), Some(1));
        assert_eq!(h.max(), Some(n));
        assert_eq!(h.mean(), Some((n as f64 + 1.0) / 2.0));
        assert_eq!(h.percentile(100.0), Some(n));
        assert_eq!(h.percentile(0.0), Some(1));
    }

    #[test]
    fn percentiles_of_a_heavy_tailed_sample_match_the_sorted_array() {
        let mut rng = Rng(42);
        let mut data: Vec<u64> = (0..samples(200_000))
            .map(|_| rng.log_uniform(1e10))
            .collect();
        let mut h = LatencyHistogram::new();
        for &v in &data {
            h.record(v);
        }
        data.sort_unstable();
        let extra = [1u64, 2500, 7500, 9999, 10_000];
        for &ph in LIST_HUNDREDTHS.iter().chain(&extra) {
            let p = ph as f64 / 100.0;
            assert_within_bound(h.percentile(p).unwrap(), exact(&data, ph), &format!("p{p}"));
        }
        let two_pass_sum: u128 = data.iter().map(|&v| u128::from(v)).sum();
        assert_eq!(h.sum(), two_pass_sum);
        assert_eq!(h.min(), data.first().copied());
        assert_eq!(h.max(), data.last().copied());
    }

    #[test]
    fn bucket_midpoint_is_within_the_bound_across_magnitudes() {
        let mut rng = Rng(7);
        for _ in 0..samples(1_000_000) {
            let v = rng.log_uniform(1e12);
            let (low, width) = bucket_low_width(index(v, SUB_BITS, BUCKETS), SUB_BITS);
            assert!(low <= v && v - low < width, "{v} outside its bucket");
            assert_within_bound(
                representative(index(v, SUB_BITS, BUCKETS), SUB_BITS),
                v,
                "mid",
            );
        }
        // A single sample reads back within the bound through the public API.
        for v in [1u64, 255, 256, 257, 1_000, 123_456_789, 3_600_000_000_000] {
            let mut h = LatencyHistogram::new();
            h.record(v);
            assert_eq!(h.percentile(50.0), Some(v), "clamped to [min, max]");
            let b: Vec<Bucket> = h.buckets().collect();
            assert_eq!(b.len(), 1);
            assert!(b[0].low_ns <= v && v <= b[0].high_ns);
            assert_within_bound(
                representative(index(v, SUB_BITS, BUCKETS), SUB_BITS),
                v,
                "v",
            );
        }
    }

    #[test]
    fn one_hour_is_not_saturated_and_larger_values_clamp_into_the_last_bucket() {
        let hour = 3_600_000_000_000u64;
        assert!(index(hour, SUB_BITS, BUCKETS) < BUCKETS - 1);
        let mut h = LatencyHistogram::new();
        h.record(u64::MAX);
        h.record(HIGHEST_TRACKABLE_NS + 1);
        h.record(HIGHEST_TRACKABLE_NS);
        let b: Vec<Bucket> = h.buckets().collect();
        assert_eq!(b.len(), 1);
        assert_eq!(b[0].count, 3);
        assert_eq!(b[0].high_ns, HIGHEST_TRACKABLE_NS);
        assert_eq!(h.max(), Some(u64::MAX));
        assert_eq!(
            h.sum(),
            u128::from(u64::MAX) + 2 * u128::from(HIGHEST_TRACKABLE_NS) + 1
        );
    }

    #[test]
    fn merge_equals_recording_everything_into_one() {
        let mut rng = Rng(3);
        let data: Vec<(u64, u64)> = (0..samples(50_000))
            .map(|_| (rng.log_uniform(1e9), rng.next() % 4))
            .collect();
        let (mut a, mut b, mut whole) = (
            LatencyHistogram::new(),
            LatencyHistogram::new(),
            LatencyHistogram::new(),
        );
        for (i, &(v, n)) in data.iter().enumerate() {
            whole.record_n(v, n);
            if i % 3 == 0 {
                a.record_n(v, n);
            } else {
                b.record_n(v, n);
            }
        }
        let mut merged = a.clone();
        merged.merge(&b);
        assert_eq!(merged, whole);
        assert_eq!(
            merged.count(),
            data.iter().map(|&(_, n)| n).sum::<u64>(),
            "count is the sum of the n's"
        );
        // Merging an empty histogram changes nothing, either way round.
        let mut e = LatencyHistogram::new();
        e.merge(&whole);
        assert_eq!(e, whole);
        e.merge(&LatencyHistogram::new());
        assert_eq!(e, whole);
    }

    #[test]
    fn record_n_equals_n_records() {
        let mut a = LatencyHistogram::new();
        let mut b = LatencyHistogram::new();
        a.record_n(12_345, 1000);
        a.record_n(99, 0);
        for _ in 0..1000 {
            b.record(12_345);
        }
        assert_eq!(a, b);
    }

    #[test]
    fn empty_and_invalid_queries_give_none() {
        let mut h = LatencyHistogram::new();
        assert_eq!(h.percentile(50.0), None);
        assert_eq!(h.min(), None);
        assert_eq!(h.mean(), None);
        assert!(h.percentiles(&FIO_DEFAULT_PERCENTILES).is_empty());
        h.record(10);
        assert_eq!(h.percentile(f64::NAN), None);
        assert_eq!(h.percentile(100.1), None);
        assert_eq!(h.percentile(-1.0), None);
        assert_eq!(
            h.percentiles(&[50.0, f64::NAN, 101.0, 1.0]),
            vec![(50.0, 10), (1.0, 10)]
        );
    }

    #[test]
    fn reset_returns_to_empty() {
        let mut h = LatencyHistogram::new();
        h.record(5);
        h.record(5_000_000);
        h.reset();
        assert_eq!(h, LatencyHistogram::new());
        assert_eq!(h.buckets().count(), 0);
    }

    #[test]
    fn buckets_cover_the_samples_in_order() {
        let mut h = LatencyHistogram::new();
        let values = [3u64, 3, 700, 701, 1_000_000, 1_000_001, 5_000_000_000];
        for v in values {
            h.record(v);
        }
        let b: Vec<Bucket> = h.buckets().collect();
        assert_eq!(b.iter().map(|b| b.count).sum::<u64>(), values.len() as u64);
        assert!(b.windows(2).all(|w| w[0].high_ns < w[1].low_ns));
        for v in values {
            assert!(b.iter().any(|b| b.low_ns <= v && v <= b.high_ns), "{v}");
        }
        // 3 is exact: its own bucket holding both 3s.
        assert_eq!(
            b[0],
            Bucket {
                low_ns: 3,
                high_ns: 3,
                count: 2
            }
        );
    }
}

//! Log-linear bucketing shared by the run histogram and the per-interval
//! histograms of the time series.
//!
//! It exists so that both histograms use one indexing rule, tested once.
//! The scheme is HdrHistogram's (Gil Tene, <https://hdrhistogram.org>) and
//! fio's `plat_val_to_idx` (stat.c): with `m` sub-bucket bits, values below
//! `2^(m+1)` get one bucket each; above that, each power-of-two range
//! `[2^k, 2^(k+1))` is split into `2^m` equal sub-buckets of width
//! `2^(k-m)`. A bucket of width `w = 2^e` starts at `lo >= 2^(m+e)`, so its
//! midpoint is within `2^-(m+1)` of every value in it.
//!
//! Indexing is branch-free: for `e = max(msb(v) - m, 0)`, the index is
//! `(e << m) + (v >> e)`; `msb(v | (2^(m+1) - 1))` gives that `e` with one
//! `leading_zeros`.

/// Values at or above `2^MAX_BITS` ns (about 9.77 hours) share the last
/// bucket.
pub(crate) const MAX_BITS: u32 = 45;

/// Number of buckets needed for sub-bucket bits `m` to cover `0..2^MAX_BITS`.
pub(crate) const fn bucket_count(m: u32) -> usize {
    ((MAX_BITS - m + 1) as usize) << m
}

/// Bucket index of `v` for sub-bucket bits `m`, clamped to `n - 1`.
#[inline(always)]
pub(crate) fn index(v: u64, m: u32, n: usize) -> usize {
    let floor = (2u64 << m) - 1;
    let e = 63 - m - (v | floor).leading_zeros();
    let idx = ((e as usize) << m) + (v >> e) as usize;
    if idx < n {
        idx
    } else {
        n - 1
    }
}

/// Smallest value of bucket `i` and the bucket's width, for sub-bucket bits `m`.
#[inline]
pub(crate) fn bucket_low_width(i: usize, m: u32) -> (u64, u64) {
    let e = (i >> m).saturating_sub(1) as u32;
    let low = ((i - ((e as usize) << m)) as u64) << e;
    (low, 1u64 << e)
}

/// The value reported for bucket `i`: its midpoint (fio's `plat_idx_to_val`
/// reports the same), or the value itself for width-1 buckets.
#[inline]
pub(crate) fn representative(i: usize, m: u32) -> u64 {
    let (low, width) = bucket_low_width(i, m);
    low + width / 2
}

/// The 1-based rank of the `p`-th percentile among `n` samples:
/// `ceil(p / 100 * n)`, at least 1 and at most `n`.
///
/// This is fio's rule (stat.c `calc_clat_percentiles` takes the first
/// bucket whose cumulative count reaches `p / 100 * n`). A product within
/// floating-point noise of an integer is taken as that integer, so that
/// 99.9 % of 100 000 is rank 99 900, not 99 901.
pub(crate) fn rank(p: f64, n: u64) -> u64 {
    let x = p * n as f64 / 100.0;
    let nearest = x.round();
    let r = if (x - nearest).abs() <= 1e-9 * nearest.max(1.0) {
        nearest
    } else {
        x.ceil()
    };
    (r as u64).clamp(1, n.max(1))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check_scheme(m: u32) {
        let n = bucket_count(m);
        let mut expected_low = 0u64;
        for i in 0..n {
            let (low, width) = bucket_low_width(i, m);
            // Buckets tile the range with no gap and no overlap.
            assert_eq!(low, expected_low, "m={m} bucket {i}");
            assert!(width.is_power_of_two());
            assert_eq!(index(low, m, n), i, "m={m} low of bucket {i}");
            assert_eq!(index(low + width - 1, m, n), i, "m={m} high of bucket {i}");
            expected_low = low + width;
        }
        // The buckets cover exactly 0..2^MAX_BITS; beyond that, the last one.
        assert_eq!(expected_low, 1u64 << MAX_BITS);
        assert_eq!(index(1u64 << MAX_BITS, m, n), n - 1);
        assert_eq!(index(u64::MAX, m, n), n - 1);
    }

    #[test]
    fn buckets_tile_the_range_for_both_resolutions() {
        check_scheme(7);
        check_scheme(4);
        check_scheme(2);
    }

    #[test]
    fn small_values_have_exact_buckets() {
        for v in 0..256u64 {
            assert_eq!(index(v, 7, bucket_count(7)), v as usize);
            assert_eq!(representative(v as usize, 7), v);
        }
    }

    #[test]
    fn rank_follows_ceil_of_p_times_n() {
        // Reference ranks from integer arithmetic with p in hundredths of a
        // percent: ceil(p_bp * n / 10_000).
        let n = 100_000u64;
        for p_bp in [100u64, 500, 5000, 9000, 9900, 9950, 9990, 9995, 9999, 10000] {
            let expect = (p_bp * n).div_ceil(10_000);
            assert_eq!(
                rank(p_bp as f64 / 100.0, n),
                expect,
                "p={}",
                p_bp as f64 / 100.0
            );
        }
        for n in [1u64, 2, 3, 7, 10, 999] {
            for p_bp in [100u64, 2500, 5000, 9900, 9999] {
                let expect = (p_bp * n).div_ceil(10_000).max(1);
                assert_eq!(rank(p_bp as f64 / 100.0, n), expect, "n={n} p_bp={p_bp}");
            }
        }
        assert_eq!(rank(0.0, 10), 1);
        assert_eq!(rank(100.0, 10), 10);
    }
}

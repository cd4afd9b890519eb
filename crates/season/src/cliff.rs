//! Finding the write cliff in a whole-drive sequential write series: the
//! point where an SSD's fast-write (SLC) cache is full and throughput falls
//! to the native flash rate, and stays there.
//!
//! The detector, on throughput per bucket (1 GiB, or 1 % of a small
//! drive's capacity):
//!
//! 1. The initial plateau is the median of the first `max(3, n / 20)`
//!    buckets (the median ignores a slow first bucket or a single spike).
//! 2. The cliff is the first bucket `i` below [`FRACTION`] (60 %) of the
//!    plateau after which throughput *stays* low: no two buckets in a row
//!    from `i` on are back at or above the threshold, and at most 10 % of
//!    them are (isolated spikes, such as a garbage-collection pause ending).
//!    A dip that recovers for two buckets or more is not a cliff.
//! 3. Fewer than 4 buckets, or a plateau of 0, finds nothing.
//!
//! The result is the bucket's start in bytes written, so it reads as "the
//! cache holds about this much".

use serde::{Deserialize, Serialize};

/// The threshold, as a fraction of the initial plateau.
pub const FRACTION: f64 = 0.6;

/// A cliff found in a series.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Cliff {
    /// Index of the first bucket after the cliff.
    pub index: usize,
    /// Initial plateau (median of the first buckets), bytes/s.
    pub plateau: f64,
    /// Median throughput from the cliff on, bytes/s.
    pub after: f64,
    /// The threshold used (FRACTION × plateau), bytes/s.
    pub threshold: f64,
}

fn median(v: &[f64]) -> f64 {
    let mut s: Vec<f64> = v.iter().copied().filter(|x| x.is_finite()).collect();
    if s.is_empty() {
        return 0.0;
    }
    s.sort_by(|a, b| a.total_cmp(b));
    let m = s.len() / 2;
    if s.len() % 2 == 1 {
        s[m]
    } else {
        (s[m - 1] + s[m]) / 2.0
    }
}

/// Find the cliff in `tput` (throughput per bucket, in order).
pub fn detect(tput: &[f64]) -> Option<Cliff> {
    let n = tput.len();
    if n < 4 {
        return None;
    }
    let k = (n / 20).max(3).min(n);
    let plateau = median(&tput[..k]);
    if plateau <= 0.0 {
        return None;
    }
    let threshold = FRACTION * plateau;
    let stays_low = |i: usize| -> bool {
        let rest = &tput[i..];
        let high = rest.iter().filter(|&&v| v >= threshold).count();
        let two_high = rest
            .windows(2)
            .any(|w| w[0] >= threshold && w[1] >= threshold);
        !two_high && (high as f64) <= 0.1 * rest.len() as f64
    };
    (1..n)
        .find(|&i| tput[i] < threshold && stays_low(i))
        .map(|index| Cliff {
            index,
            plateau,
            after: median(&tput[index..]),
            threshold,
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn series(parts: &[(f64, usize)]) -> Vec<f64> {
        parts
            .iter()
            .flat_map(|&(v, n)| std::iter::repeat_n(v, n))
            .collect()
    }

    #[test]
    fn a_flat_series_has_no_cliff() {
        assert_eq!(detect(&series(&[(500.0, 40)])), None);
        // A gentle decline that stays above 60 %.
        let v: Vec<f64> = (0..50).map(|i| 500.0 - 3.0 * i as f64).collect();
        assert_eq!(detect(&v), None);
    }

    #[test]
    fn a_step_down_is_found_where_it_starts() {
        let c = detect(&series(&[(1000.0, 10), (400.0, 30)])).unwrap();
        assert_eq!(c.index, 10);
        assert_eq!(c.plateau, 1000.0);
        assert_eq!(c.after, 400.0);
        assert_eq!(c.threshold, 600.0);
    }

    #[test]
    fn a_dip_that_recovers_is_not_the_cliff() {
        // A transient dip at 5 recovers for four buckets; the real cliff is at 10.
        let mut v = series(&[(100.0, 5), (50.0, 1), (100.0, 4), (40.0, 200)]);
        assert_eq!(detect(&v).unwrap().index, 10);
        // Without a later cliff: nothing.
        v.truncate(10);
        assert_eq!(detect(&v), None);
    }

    #[test]
    fn isolated_spikes_after_the_cliff_do_not_hide_it() {
        let mut v = series(&[(100.0, 10), (40.0, 40)]);
        v[20] = 95.0;
        v[35] = 90.0;
        assert_eq!(detect(&v).unwrap().index, 10);
    }

    #[test]
    fn a_slow_first_bucket_does_not_lower_the_plateau() {
        let mut v = series(&[(100.0, 20), (30.0, 20)]);
        v[0] = 20.0;
        let c = detect(&v).unwrap();
        assert_eq!(c.plateau, 100.0);
        assert_eq!(c.index, 20);
    }

    #[test]
    fn too_short_or_empty_finds_nothing() {
        assert_eq!(detect(&[]), None);
        assert_eq!(detect(&[100.0, 10.0, 10.0]), None);
        assert_eq!(detect(&[0.0; 10]), None);
    }
}

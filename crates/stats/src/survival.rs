//! Kaplan–Meier estimate of a duration's distribution when some durations
//! are only known to exceed what was seen (right-censored): Kaplan and
//! Meier, "Nonparametric estimation from incomplete observations", JASA
//! 1958.
//!
//! Each duration is either *observed* (it ended at the value recorded) or
//! *censored* (it was still running at the value recorded, then lost from
//! sight). Leaving the censored ones out biases every percentile low: the
//! longer a duration, the likelier something cut it off. The estimate
//! instead walks the values in increasing order; at each value where `d`
//! durations ended among the `n` still under way, the chance of lasting
//! beyond it is multiplied by `1 - d / n`, and the censored ones leave `n`
//! after it. Durations that end and are censored at the same value count as
//! ended first, as in the usual convention.
//!
//! The inputs are two [`LatencyHistogram`]s, so the values are those their
//! percentiles report (a bucket's midpoint, clamped into the exact range of
//! the durations that ended), within [`crate::RELATIVE_ERROR`] of the
//! durations, and the memory is the histograms' whatever the number of
//! durations.

use crate::LatencyHistogram;

/// The estimated survival function: the chance that a duration lasts
/// beyond each value where one was seen to end.
#[derive(Debug, Clone, PartialEq)]
pub struct Survival {
    /// `(value ns, chance of lasting beyond it)`, in increasing value, one
    /// step per bucket in which a duration ended.
    steps: Vec<(u64, f64)>,
    /// Durations that ended.
    observed: u64,
    /// Durations censored.
    censored: u64,
    /// The largest value recorded in either histogram, ns.
    largest: u64,
}

impl Survival {
    /// The estimate from the durations that ended (`observed`) and those
    /// only known to last at least as long as recorded (`censored`).
    pub fn kaplan_meier(observed: &LatencyHistogram, censored: &LatencyHistogram) -> Survival {
        let mut at_risk = observed.count() + censored.count();
        let mut s = 1.0f64;
        let mut steps = Vec::new();
        for ((d, value), (c, _)) in observed.counts_valued().zip(censored.counts_valued()) {
            if d > 0 && at_risk > 0 {
                s *= 1.0 - d as f64 / at_risk as f64;
                steps.push((value, s));
            }
            at_risk = at_risk.saturating_sub(d + c);
        }
        Survival {
            steps,
            observed: observed.count(),
            censored: censored.count(),
            largest: observed.max().unwrap_or(0).max(censored.max().unwrap_or(0)),
        }
    }

    /// Durations that ended.
    pub fn observed(&self) -> u64 {
        self.observed
    }

    /// Durations censored.
    pub fn censored(&self) -> u64 {
        self.censored
    }

    /// The `p`-th percentile (`p` in percent): the smallest value by which
    /// at least `p` % of the durations are estimated to have ended. `None`
    /// when nothing ended or `p` is outside `0..=100`, and when the
    /// censoring leaves the estimate short of `p` %: every duration not
    /// seen to end lasted past the largest value recorded, and how far is
    /// unknown ([`Survival::at_least`] gives that bound).
    pub fn percentile(&self, p: f64) -> Option<u64> {
        if !(0.0..=100.0).contains(&p) {
            return None;
        }
        let q = p / 100.0;
        // A product within floating-point noise of the level counts as
        // reaching it (three of four ended is 75 %).
        self.steps
            .iter()
            .find(|&&(_, s)| 1.0 - s >= q - 1e-12)
            .map(|&(v, _)| v)
    }

    /// The `p`-th percentile, or where [`Survival::percentile`] cannot
    /// tell, the largest value recorded: a lower bound on it. `None` when
    /// nothing was recorded.
    pub fn at_least(&self, p: f64) -> Option<u64> {
        self.percentile(p)
            .or_else(|| (self.observed + self.censored > 0).then_some(self.largest))
    }

    /// The mean duration restricted to the largest value at which one
    /// ended: the area under the survival function up to it, ns. A
    /// duration censored beyond that value counts as lasting to it. `None`
    /// when nothing ended.
    pub fn restricted_mean(&self) -> Option<f64> {
        let mut area = 0.0;
        let (mut prev_v, mut prev_s) = (0u64, 1.0f64);
        for &(v, s) in &self.steps {
            area += prev_s * (v - prev_v) as f64;
            (prev_v, prev_s) = (v, s);
        }
        (!self.steps.is_empty()).then_some(area)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hist(vals: &[u64]) -> LatencyHistogram {
        let mut h = LatencyHistogram::new();
        for &v in vals {
            h.record(v);
        }
        h
    }

    #[test]
    fn without_censoring_it_is_the_empirical_distribution() {
        let s = Survival::kaplan_meier(&hist(&[10, 20, 30, 40]), &hist(&[]));
        assert_eq!(s.percentile(25.0), Some(10));
        assert_eq!(s.percentile(50.0), Some(20));
        assert_eq!(s.percentile(75.0), Some(30));
        assert_eq!(s.percentile(100.0), Some(40));
        // (10 + 20 + 30 + 40) / 4.
        assert_eq!(s.restricted_mean(), Some(25.0));
        // The same values a histogram's percentiles report, beyond the
        // exact range too.
        let h = hist(&[4_000, 5_000, 70_000]);
        let s = Survival::kaplan_meier(&h, &hist(&[]));
        for p in [1.0, 50.0, 100.0] {
            assert_eq!(s.percentile(p), h.percentile(p), "{p}");
        }
    }

    #[test]
    fn censored_durations_move_the_percentiles_up() {
        // The textbook case: ended at 10, 30 and 50; censored at 20 and
        // 40. S(10) = 4/5, S(30) = 4/5 * 2/3, S(50) = 0: the share ended
        // steps to 1/5, then 7/15, then all. Left out, the censored ones
        // would give a median of 30; with them it is 50.
        let s = Survival::kaplan_meier(&hist(&[10, 30, 50]), &hist(&[20, 40]));
        assert_eq!(s.observed(), 3);
        assert_eq!(s.censored(), 2);
        assert_eq!(s.percentile(20.0), Some(10));
        assert_eq!(s.percentile(21.0), Some(30));
        assert_eq!(s.percentile(46.0), Some(30));
        assert_eq!(s.percentile(47.0), Some(50));
        assert_eq!(s.percentile(50.0), Some(50));
        // 10 * 1 + 20 * 4/5 + 20 * 8/15.
        let m = s.restricted_mean().unwrap();
        assert!((m - (10.0 + 16.0 + 20.0 * 8.0 / 15.0)).abs() < 1e-9, "{m}");
    }

    #[test]
    fn heavy_censoring_leaves_the_high_percentiles_unknown_but_bounded() {
        // Half end at 5; the other half are cut off at 15, before any of
        // them is seen to end.
        let s = Survival::kaplan_meier(&hist(&[5; 10]), &hist(&[15; 10]));
        assert_eq!(s.percentile(50.0), Some(5));
        assert_eq!(s.percentile(90.0), None);
        assert_eq!(s.at_least(90.0), Some(15));
        assert_eq!(
            Survival::kaplan_meier(&hist(&[]), &hist(&[])).at_least(50.0),
            None
        );
    }

    #[test]
    fn an_end_and_a_censoring_at_the_same_value_count_the_end_first() {
        // Three under way at 10: one ends there (S = 2/3), one is censored
        // there, the last ends at 20 (S = 0). Censored first, S(10) would
        // be 1/2 and the median 10.
        let s = Survival::kaplan_meier(&hist(&[10, 20]), &hist(&[10]));
        assert_eq!(s.percentile(33.0), Some(10));
        assert_eq!(s.percentile(50.0), Some(20));
    }
}

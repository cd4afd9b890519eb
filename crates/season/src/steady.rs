//! The SNIA Solid State Storage Performance Test Specification's steady-state
//! test (PTS, see shared/REFERENCE.md): a pure function of the tracked
//! value per round (for the IOPS test, the random-write IOPS).
//!
//! Over the last [`Rule::window`] rounds (5), the measurement is in steady
//! state when both hold:
//!
//! - data excursion: `max − min ≤ data_pct % × mean` (20 %);
//! - slope excursion: the least-squares line through (round, value) changes
//!   by `|slope| × (window − 1) ≤ slope_pct % × mean` (10 %) across the
//!   window.
//!
//! Both limits are inclusive, as the specification writes them (≤). A
//! window whose mean is not positive (no throughput) is never steady.

use serde::{Deserialize, Serialize};

/// The test's parameters.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Rule {
    /// Rounds in the window (PTS: 5).
    pub window: usize,
    /// Largest data excursion, percent of the window's mean (PTS: 20).
    pub data_pct: f64,
    /// Largest slope excursion, percent of the window's mean (PTS: 10).
    pub slope_pct: f64,
}

/// The PTS rule: 5 rounds, 20 % data excursion, 10 % slope excursion.
pub const PTS: Rule = Rule {
    window: 5,
    data_pct: 20.0,
    slope_pct: 10.0,
};

/// The measurement window and its figures.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Window {
    /// First round of the window (1-based).
    pub first_round: usize,
    /// Last round of the window (1-based).
    pub last_round: usize,
    /// The tracked values of the window's rounds.
    pub values: Vec<f64>,
    /// Their mean.
    pub average: f64,
    /// max − min.
    pub data_excursion: f64,
    /// The data excursion allowed: `data_pct` % of the mean.
    pub data_excursion_limit: f64,
    /// Slope of the least-squares line, per round.
    pub slope: f64,
    /// Its value at the window's first round.
    pub intercept: f64,
    /// |slope| × (window − 1): the line's change across the window.
    pub slope_excursion: f64,
    /// The slope excursion allowed: `slope_pct` % of the mean.
    pub slope_excursion_limit: f64,
    /// The data excursion is within its limit.
    pub data_ok: bool,
    /// The slope excursion is within its limit.
    pub slope_ok: bool,
}

/// The verdict after some rounds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Verdict {
    /// Steady state reached (in the last window).
    pub steady: bool,
    /// Rounds looked at.
    pub rounds: usize,
    /// The rule applied.
    pub rule: Rule,
    /// The last window (None with fewer rounds than the window).
    pub window: Option<Window>,
    /// The verdict in words.
    pub reason: String,
}

/// Least-squares line through (i, v[i]), i = 0.. : (slope, intercept at 0).
pub fn fit(v: &[f64]) -> (f64, f64) {
    let n = v.len() as f64;
    if v.is_empty() {
        return (0.0, 0.0);
    }
    let xm = (n - 1.0) / 2.0;
    let ym = v.iter().sum::<f64>() / n;
    let (mut sxy, mut sxx) = (0.0, 0.0);
    for (i, y) in v.iter().enumerate() {
        let dx = i as f64 - xm;
        sxy += dx * (y - ym);
        sxx += dx * dx;
    }
    let slope = if sxx > 0.0 { sxy / sxx } else { 0.0 };
    (slope, ym - slope * xm)
}

/// Evaluate one window of values that ends at round `last_round`.
pub fn window(values: &[f64], last_round: usize, rule: &Rule) -> Window {
    let n = values.len();
    let average = values.iter().sum::<f64>() / n.max(1) as f64;
    let max = values.iter().copied().fold(f64::MIN, f64::max);
    let min = values.iter().copied().fold(f64::MAX, f64::min);
    let data_excursion = if n > 0 { max - min } else { 0.0 };
    let (slope, intercept) = fit(values);
    let slope_excursion = slope.abs() * n.saturating_sub(1) as f64;
    let data_excursion_limit = rule.data_pct / 100.0 * average;
    let slope_excursion_limit = rule.slope_pct / 100.0 * average;
    // A tiny tolerance so that a window exactly at the limit is not lost
    // to the rounding of the sums.
    let le = |a: f64, b: f64| a <= b + b.abs() * 1e-12;
    Window {
        first_round: last_round + 1 - n,
        last_round,
        values: values.to_vec(),
        average,
        data_excursion,
        data_excursion_limit,
        slope,
        intercept,
        slope_excursion,
        slope_excursion_limit,
        data_ok: average > 0.0 && le(data_excursion, data_excursion_limit),
        slope_ok: average > 0.0 && le(slope_excursion, slope_excursion_limit),
    }
}

/// The verdict over `values` (one per round, in order): the last
/// `rule.window` rounds are the window.
pub fn assess(values: &[f64], rule: &Rule) -> Verdict {
    let n = values.len();
    if n < rule.window || rule.window == 0 {
        return Verdict {
            steady: false,
            rounds: n,
            rule: *rule,
            window: None,
            reason: format!(
                "{n} round(s): the test needs a window of {} rounds",
                rule.window
            ),
        };
    }
    let w = window(&values[n - rule.window..], n, rule);
    let steady = w.data_ok && w.slope_ok;
    let reason = if w.average <= 0.0 {
        "the window's mean is 0: no throughput to be steady at".to_string()
    } else {
        format!(
            "rounds {}-{}: data excursion {:.1}% of the mean ({} {:.0}%), slope excursion {:.1}% ({} {:.0}%)",
            w.first_round,
            w.last_round,
            100.0 * w.data_excursion / w.average,
            if w.data_ok { "within" } else { "over" },
            rule.data_pct,
            100.0 * w.slope_excursion / w.average,
            if w.slope_ok { "within" } else { "over" },
            rule.slope_pct
        )
    };
    Verdict {
        steady,
        rounds: n,
        rule: *rule,
        window: Some(w),
        reason,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-9
    }

    #[test]
    fn a_flat_noisy_window_is_steady() {
        // mean 100; max-min 4; dx -2..2, dy 0,2,-2,1,-1: Σdxdy = -3, Σdx² = 10.
        let v = assess(&[100.0, 102.0, 98.0, 101.0, 99.0], &PTS);
        let w = v.window.as_ref().unwrap();
        assert!(v.steady, "{}", v.reason);
        assert!(close(w.average, 100.0));
        assert!(close(w.data_excursion, 4.0));
        assert!(close(w.slope, -0.3));
        assert!(close(w.slope_excursion, 1.2));
        assert!(close(w.intercept, 100.6));
        assert!(close(w.data_excursion_limit, 20.0));
        assert!(close(w.slope_excursion_limit, 10.0));
        assert_eq!((w.first_round, w.last_round), (1, 5));
    }

    #[test]
    fn a_rising_window_fails_both() {
        let v = assess(&[80.0, 90.0, 100.0, 110.0, 120.0], &PTS);
        let w = v.window.unwrap();
        assert!(!v.steady);
        assert!(close(w.data_excursion, 40.0) && !w.data_ok);
        assert!(close(w.slope, 10.0) && close(w.slope_excursion, 40.0) && !w.slope_ok);
    }

    #[test]
    fn data_within_but_slope_over_is_not_steady() {
        // mean 100, excursion 16 (ok), slope 4 -> 16 > 10.
        let v = assess(&[92.0, 96.0, 100.0, 104.0, 108.0], &PTS);
        let w = v.window.unwrap();
        assert!(w.data_ok && !w.slope_ok && !v.steady);
        assert!(close(w.slope_excursion, 16.0));
    }

    #[test]
    fn limits_are_inclusive() {
        // mean 100, excursion exactly 20; dy -10,10,0,0,0: Σdxdy = 10, slope 1, excursion 4.
        let v = assess(&[90.0, 110.0, 100.0, 100.0, 100.0], &PTS);
        let w = v.window.unwrap();
        assert!(close(w.data_excursion, 20.0) && w.data_ok);
        assert!(close(w.slope, 1.0) && w.slope_ok);
        assert!(v.steady);
        // Just over: 21 > 20.
        let v = assess(&[89.5, 110.5, 100.0, 100.0, 100.0], &PTS);
        assert!(!v.window.unwrap().data_ok && !v.steady);
    }

    #[test]
    fn the_window_is_the_last_five_rounds() {
        let v = assess(&[50.0, 60.0, 100.0, 102.0, 98.0, 101.0, 99.0], &PTS);
        let w = v.window.unwrap();
        assert!(v.steady);
        assert_eq!((w.first_round, w.last_round), (3, 7));
        assert_eq!(w.values, vec![100.0, 102.0, 98.0, 101.0, 99.0]);
    }

    #[test]
    fn too_few_rounds_and_zero_mean_are_not_steady() {
        let v = assess(&[100.0, 100.0, 100.0, 100.0], &PTS);
        assert!(!v.steady && v.window.is_none());
        assert!(v.reason.contains("window of 5"), "{}", v.reason);
        let v = assess(&[0.0; 5], &PTS);
        assert!(!v.steady);
        assert!(v.reason.contains("mean is 0"), "{}", v.reason);
    }

    #[test]
    fn fit_recovers_a_line() {
        let (s, b) = fit(&[3.0, 5.0, 7.0, 9.0]);
        assert!(close(s, 2.0) && close(b, 3.0));
        assert_eq!(fit(&[7.0]), (0.0, 7.0));
    }
}

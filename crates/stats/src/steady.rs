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
//!
//! fio's `steadystate` option judges a window of per-interval IOPS or
//! bandwidth values by one of two criteria on the same least-squares line
//! ([`fit`]) and mean: the slope, or the largest deviation from the mean,
//! each absolute or as a percent of the mean ([`FioRule`], [`fio_check`]).
//! `drivelab season` (PTS) and `drivelab run` (fio's option) share this
//! module, which is why it lives in the stats crate.

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

/// What fio's `steadystate` watches.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum FioMetric {
    /// I/O per second.
    Iops,
    /// Bytes per second.
    Bw,
}

/// fio's `steadystate=CRITERION:LIMIT`: `iops`, `iops_slope`, `bw`,
/// `bw_slope`, the limit absolute or as a percent of the window's mean.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct FioRule {
    /// IOPS or bandwidth.
    pub metric: FioMetric,
    /// The least-squares slope (`_slope`); else the largest deviation from
    /// the mean.
    pub slope: bool,
    /// The limit: percent of the mean when `percent`, else IOPS or bytes/s
    /// (per interval step for a slope).
    pub limit: f64,
    /// `limit` is a percentage (`…%`).
    pub percent: bool,
}

impl FioRule {
    /// Parse fio's value (`iops_slope:0.1%`, `bw:10m`, `iops:20`). The
    /// error says what is accepted, without the key (the caller names it).
    pub fn parse(v: &str) -> Result<FioRule, String> {
        let expect =
            "iops, iops_slope, bw or bw_slope, ':' and a limit (e.g. iops_slope:0.1% or bw:10m)";
        let (crit, lim) = v.trim().split_once(':').ok_or_else(|| expect.to_string())?;
        let (metric, slope) = match crit.trim().to_ascii_lowercase().as_str() {
            "iops" => (FioMetric::Iops, false),
            "iops_slope" => (FioMetric::Iops, true),
            "bw" => (FioMetric::Bw, false),
            "bw_slope" => (FioMetric::Bw, true),
            _ => return Err(expect.to_string()),
        };
        let lim = lim.trim();
        let (num, percent) = match lim.strip_suffix('%') {
            Some(n) => (n.trim(), true),
            None => (lim, false),
        };
        let limit = if percent || metric == FioMetric::Iops {
            num.parse::<f64>().map_err(|_| expect.to_string())?
        } else {
            bw_limit(num).ok_or_else(|| expect.to_string())?
        };
        if !limit.is_finite() || limit < 0.0 {
            return Err(expect.to_string());
        }
        Ok(FioRule {
            metric,
            slope,
            limit,
            percent,
        })
    }

    /// fio's `ss` string: `iops_slope:0.100000%`.
    pub fn fio_string(&self) -> String {
        format!(
            "{}{}:{:.6}{}",
            self.metric_name(),
            if self.slope { "_slope" } else { "" },
            self.limit,
            if self.percent { "%" } else { "" }
        )
    }

    /// `iops` or `bw`.
    pub fn metric_name(&self) -> &'static str {
        match self.metric {
            FioMetric::Iops => "iops",
            FioMetric::Bw => "bw",
        }
    }
}

/// A bandwidth limit in bytes/s with fio's size suffixes (k = 1024).
fn bw_limit(s: &str) -> Option<f64> {
    let t = s.trim().to_ascii_lowercase();
    let t = t.strip_suffix("/s").unwrap_or(&t);
    let t = t.strip_suffix('b').unwrap_or(t);
    let t = t.strip_suffix('i').unwrap_or(t);
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (n, suffix) = t.split_at(split);
    let n: f64 = n.parse().ok()?;
    let mult = match suffix {
        "" => 1.0,
        "k" => 1024.0,
        "m" => 1024.0 * 1024.0,
        "g" => 1024.0 * 1024.0 * 1024.0,
        "t" => 1024f64.powi(4),
        _ => return None,
    };
    Some(n * mult)
}

/// fio's figures for one full window.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct FioCheck {
    /// The window's mean.
    pub mean: f64,
    /// Least-squares slope per interval (0 for a deviation rule, as fio
    /// reports it).
    pub slope: f64,
    /// Largest |value − mean| (0 for a slope rule, as fio reports it).
    pub max_deviation: f64,
    /// What is compared with the limit: the slope or the deviation, as a
    /// percent of the mean for a percent rule.
    pub criterion: f64,
    /// The criterion is within the limit (strictly below it, as fio).
    pub met: bool,
}

/// Judge a full window (values in time order) by fio's rule. A window
/// whose mean is not positive is never steady under a percent rule (fio
/// would divide by it).
pub fn fio_check(values: &[f64], rule: &FioRule) -> FioCheck {
    let n = values.len().max(1) as f64;
    let mean = values.iter().sum::<f64>() / n;
    let (slope, max_deviation, raw) = if rule.slope {
        let s = fit(values).0;
        (s, 0.0, s)
    } else {
        let d = values.iter().fold(0.0f64, |m, v| m.max((v - mean).abs()));
        (0.0, d, d)
    };
    if rule.percent && mean <= 0.0 {
        return FioCheck {
            mean,
            slope,
            max_deviation,
            criterion: 0.0,
            met: false,
        };
    }
    let criterion = if rule.percent {
        100.0 * raw / mean
    } else {
        raw
    };
    FioCheck {
        mean,
        slope,
        max_deviation,
        criterion,
        met: criterion.abs() < rule.limit,
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
    #[test]
    fn fio_rules_parse_and_print_as_fio() {
        let r = FioRule::parse("iops_slope:0.1%").unwrap();
        assert_eq!(
            (r.metric, r.slope, r.percent),
            (FioMetric::Iops, true, true)
        );
        assert_eq!(r.fio_string(), "iops_slope:0.100000%");
        let r = FioRule::parse("bw:10m").unwrap();
        assert_eq!(
            (r.metric, r.slope, r.percent),
            (FioMetric::Bw, false, false)
        );
        assert!(close(r.limit, 10.0 * 1024.0 * 1024.0));
        assert_eq!(
            FioRule::parse("iops:20").unwrap().fio_string(),
            "iops:20.000000"
        );
        for bad in ["iops", "lat:1%", "iops:x", "bw:1q", "iops:-1", ""] {
            assert!(FioRule::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn fio_deviation_and_slope_criteria() {
        let dev = FioRule::parse("iops:10%").unwrap();
        // mean 500, largest deviation 10: 2 %.
        let c = fio_check(&[490.0, 500.0, 510.0], &dev);
        assert!(close(c.mean, 500.0) && close(c.max_deviation, 10.0));
        assert!(close(c.criterion, 2.0) && c.met && c.slope == 0.0);
        let c = fio_check(&[400.0, 500.0, 600.0], &dev);
        assert!(close(c.criterion, 20.0) && !c.met);
        // Absolute: a deviation of exactly the limit is not below it.
        let abs = FioRule::parse("iops:10").unwrap();
        assert!(!fio_check(&[490.0, 500.0, 510.0], &abs).met);
        let slope = FioRule::parse("iops_slope:1%").unwrap();
        // slope 100 per step over mean 500: 20 %; falling counts the same.
        let c = fio_check(&[400.0, 500.0, 600.0], &slope);
        assert!(close(c.slope, 100.0) && close(c.criterion, 20.0) && !c.met);
        let c = fio_check(&[600.0, 500.0, 400.0], &slope);
        assert!(close(c.criterion, -20.0) && !c.met);
        let c = fio_check(&[500.0, 502.0, 501.0], &slope);
        assert!(close(c.slope, 0.5) && c.met);
        assert!(!fio_check(&[0.0, 0.0, 0.0], &slope).met);
    }
}

//! fio's latency target: find the highest queue depth at which a given
//! percentile of I/Os completes within a latency target.
//!
//! Options (fio's names and units): `latency_target` (bare number: µs),
//! `latency_window` (bare: µs), `latency_percentile` (0–100, default 100),
//! `latency_run` (keep adjusting instead of stopping at the answer).
//!
//! The search, as fio runs it: the job starts at depth 1. Each window of
//! `latency_window` counts the I/Os completed and those over the target.
//! When at least `latency_percentile` % were within it, the window
//! succeeded: the depth doubles (or, once some depth has failed, moves
//! halfway up towards it). When too many were over, the depth moves
//! halfway down towards the last depth that succeeded, after the I/Os in
//! flight have completed. With a percentile of 100, a single late I/O
//! fails the window at once; at depth 1 that ends the job with ETIMEDOUT,
//! as fio's `max latency exceeded`. When a success leaves the depth where
//! it was, that is the answer: unless `latency_run` is set, the statistics
//! are reset, one more window runs at that depth (what the job reports),
//! and the job ends after it succeeds. The depth is reported as fio's
//! `latency_depth`.
//!
//! The job loop asks [`LatSearch::completed`] once per completion (a
//! comparison and a counter) and [`LatSearch::check`] once per loop turn (a
//! comparison until a window is over): no allocation, no lock.

use crate::spec::decl::{opt, OptionDecl, OptionKind};
use std::time::Duration;

use crate::SpecError;

/// The `latency_*` options of a job.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LatSpec {
    /// `latency_target`, ns (0: no search).
    pub target_ns: u64,
    /// `latency_window`.
    pub window: Duration,
    /// `latency_percentile`, percent.
    pub percentile: f64,
    /// `latency_run`.
    pub run: bool,
    /// `max_latency` per direction (read, write, trim), ns; 0: none.
    pub max_ns: [u64; 3],
}

impl Default for LatSpec {
    fn default() -> Self {
        LatSpec {
            target_ns: 0,
            window: Duration::ZERO,
            percentile: 100.0,
            run: false,
            max_ns: [0; 3],
        }
    }
}

/// fio's time with microseconds when bare (`500`, `500us`, `2ms`, `1s`).
fn parse_usec(key: &str, v: &str) -> Result<Duration, SpecError> {
    let t = v.trim();
    let bad = || SpecError::BadValue {
        key: key.to_string(),
        value: v.to_string(),
        expect: "a time such as 500 (µs when bare), 500us, 2ms or 1s".to_string(),
    };
    if !t.is_empty() && t.chars().all(|c| c.is_ascii_digit()) {
        let n: u64 = t.parse().map_err(|_| bad())?;
        return Ok(Duration::from_micros(n));
    }
    crate::spec::size::parse_duration(key, t).map_err(|_| bad())
}

impl LatSpec {
    /// Set one of [`Self::OPTIONS`].
    pub fn set(&mut self, key: &str, v: &str) -> Result<(), SpecError> {
        match key {
            "latency_target" => {
                self.target_ns = u64::try_from(parse_usec(key, v)?.as_nanos()).unwrap_or(u64::MAX)
            }
            "latency_window" => self.window = parse_usec(key, v)?,
            "max_latency" => {
                let dirs = crate::spec::value::per_direction(v);
                for (k, d) in dirs.iter().enumerate() {
                    if let Some(d) = d {
                        self.max_ns[k] =
                            u64::try_from(parse_usec(key, d)?.as_nanos()).unwrap_or(u64::MAX);
                    }
                }
            }
            "latency_percentile" => {
                let p: f64 = v
                    .trim()
                    .parse()
                    .ok()
                    .filter(|p: &f64| (0.0..=100.0).contains(p))
                    .ok_or_else(|| SpecError::BadValue {
                        key: key.to_string(),
                        value: v.to_string(),
                        expect: "a percentage from 0 to 100 (e.g. 99.9)".to_string(),
                    })?;
                self.percentile = p;
            }
            "latency_run" => {
                self.run = match v.trim().to_ascii_lowercase().as_str() {
                    "" | "1" | "true" | "yes" | "on" => true,
                    "0" | "false" | "no" | "off" => false,
                    _ => {
                        return Err(SpecError::BadValue {
                            key: key.to_string(),
                            value: v.to_string(),
                            expect: "1 or 0".to_string(),
                        })
                    }
                }
            }
            _ => unreachable!("latency_target::LatSpec::set called with {key}"),
        }
        Ok(())
    }

    /// Whether the search runs (a target is set).
    pub fn enabled(&self) -> bool {
        self.target_ns > 0
    }
}

/// What the job loop must do after a step of the search.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    /// Carry on.
    Go,
    /// The depth went down: issue nothing until the I/Os in flight have
    /// completed, then call [`LatSearch::new_cycle`].
    Quiesce,
    /// The depth is found: drain, reset the job's statistics, then call
    /// [`LatSearch::new_cycle`] and run one more window.
    FinalRun,
    /// The final window succeeded: the job ends.
    Done,
    /// An I/O over the target at depth 1 with a percentile of 100: the job
    /// fails with ETIMEDOUT.
    Fatal,
}

/// The search's state (fio's `latency_qd`, `_low`, `_high`, …).
#[derive(Debug, Clone, PartialEq)]
pub struct LatSearch {
    spec: LatSpec,
    max_qd: u32,
    /// The depth the job may use now.
    pub qd: u32,
    low: u32,
    high: u32,
    stable: u32,
    cycle_start: u64,
    ios: u64,
    cycle_ios: u64,
    failed: u64,
    /// The final window is running.
    pub end_run: bool,
    window_ns: u64,
}

impl LatSearch {
    /// Start a search up to `max_qd` (the job's `iodepth`) at time `now`.
    pub fn new(spec: LatSpec, max_qd: u32, now: u64) -> LatSearch {
        let mut s = LatSearch {
            spec,
            max_qd: max_qd.max(1),
            qd: 1,
            low: 1,
            high: max_qd.max(1),
            stable: 0,
            cycle_start: now,
            ios: 0,
            cycle_ios: 0,
            failed: 0,
            end_run: false,
            window_ns: u64::try_from(spec.window.as_nanos()).unwrap_or(u64::MAX),
        };
        s.restart(now);
        s
    }

    /// The job's measurement (re)starts: the search starts over at depth 1,
    /// unless its final window is running (as fio's reset of the
    /// statistics at the end of `ramp_time`).
    pub fn restart(&mut self, now: u64) {
        if self.end_run {
            return;
        }
        self.qd = 1;
        self.low = 1;
        self.high = self.max_qd;
        self.stable = 0;
        self.new_cycle(now);
    }

    /// A new window starts now.
    pub fn new_cycle(&mut self, now: u64) {
        self.cycle_start = now;
        self.cycle_ios = self.ios;
        self.failed = 0;
    }

    /// One read, write or trim completed with latency `lat_ns`.
    #[inline]
    pub fn completed(&mut self, lat_ns: u64) -> Step {
        self.ios += 1;
        if lat_ns <= self.spec.target_ns {
            return Step::Go;
        }
        if self.spec.percentile >= 100.0 {
            return self.failed_window();
        }
        self.failed += 1;
        Step::Go
    }

    /// Once per loop turn: judge the window when it is over.
    #[inline]
    pub fn check(&mut self, now: u64) -> Step {
        if now.saturating_sub(self.cycle_start) < self.window_ns {
            return Step::Go;
        }
        let ios = self.ios - self.cycle_ios;
        // No I/O in a window is not a success (fio's 0/0 compares false).
        let ok = ios > 0
            && (ios - self.failed.min(ios)) as f64 * 100.0 / ios as f64 >= self.spec.percentile;
        if ok {
            self.success(now)
        } else {
            match self.failed_window() {
                // At depth 1 a failed window changes nothing: the window
                // goes on growing until its share succeeds (as fio).
                Step::Fatal => Step::Go,
                s => s,
            }
        }
    }

    fn success(&mut self, now: u64) -> Step {
        let before = self.qd;
        self.low = self.qd;
        if self.qd + 1 == self.high {
            // One below the depth that failed: let that depth be tried
            // again after three successes in a row.
            self.stable += 1;
            if self.stable >= 3 {
                self.high += 1;
                self.stable = 0;
            }
        }
        self.qd = if self.high != self.max_qd {
            (self.qd + self.high) / 2
        } else {
            self.qd.saturating_mul(2)
        }
        .min(self.max_qd);
        if !self.spec.run && self.qd == before {
            if self.end_run {
                return Step::Done;
            }
            self.end_run = true;
            return Step::FinalRun;
        }
        self.new_cycle(now);
        Step::Go
    }

    fn failed_window(&mut self) -> Step {
        if self.qd == 1 {
            return Step::Fatal;
        }
        self.high = self.qd;
        if self.qd == self.low {
            self.low -= 1;
        }
        self.qd = (self.qd + self.low) / 2;
        self.stable = 0;
        Step::Quiesce
    }
}

/// A failed I/O's errno in words; under a latency target, ETIMEDOUT is
/// the search's (fio's "max latency exceeded"), not the device's.
pub fn error_words(spec: &LatSpec, errno: i32) -> String {
    let os = std::io::Error::from_raw_os_error(errno).to_string();
    if spec.enabled() && errno == libc::ETIMEDOUT {
        format!(
            "latency over latency_target ({} ns) at depth 1 with latency_percentile=100: {os}",
            spec.target_ns
        )
    } else {
        os
    }
}

impl LatSpec {
    /// The family's options (fio's names and units).
    pub const OPTIONS: &'static [OptionDecl] = &[
        OptionDecl {
            name: "latency_target",
            aliases: &[],
            kind: OptionKind::Time,
            default: "0 (off)",
            bounds: None,
            unit: "us when bare",
            help: "search for the highest depth (up to iodepth) at which latency_percentile of I/Os complete within this latency; reported as latency_depth",
        },
        OptionDecl {
            name: "latency_window",
            aliases: &[],
            kind: OptionKind::Time,
            default: "0",
            bounds: None,
            unit: "us when bare",
            help: "with latency_target: how long each depth is tried",
        },
        OptionDecl {
            name: "max_latency",
            aliases: &[],
            kind: OptionKind::Time,
            default: "0 (none)",
            bounds: None,
            unit: "us when bare",
            help: "end the job with ETIMEDOUT when an I/O's latency exceeds this; READ,WRITE[,TRIM] per direction",
        },
        opt!(
            "latency_percentile",
            [],
            Text,
            "100",
            "with latency_target: the percent of I/Os (0-100) that must be within the target"
        ),
        opt!(
            "latency_run",
            [],
            Bool,
            "0",
            "with latency_target: keep adjusting the depth for the whole run instead of ending at the depth found"
        ),
    ];
}

impl crate::spec::family::OptionFamily for LatSpec {
    fn options(&self) -> &'static [OptionDecl] {
        Self::OPTIONS
    }

    fn set(&mut self, key: &'static str, v: &str) -> Result<(), SpecError> {
        LatSpec::set(self, key, v)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = 1_000_000;

    fn spec(pct: f64, run: bool) -> LatSpec {
        LatSpec {
            target_ns: 100_000,
            window: Duration::from_millis(10),
            percentile: pct,
            run,
            max_ns: [0; 3],
        }
    }

    #[test]
    fn max_latency_takes_a_value_per_direction() {
        let mut s = LatSpec::default();
        s.set("max_latency", "100").unwrap();
        assert_eq!(s.max_ns, [100_000; 3]);
        s.set("max_latency", "1ms,2ms").unwrap();
        assert_eq!(s.max_ns, [1_000_000, 2_000_000, 2_000_000]);
        assert!(s.set("max_latency", "soon").is_err());
        assert!(!s.enabled(), "max_latency alone runs no search");
    }

    /// Run windows of `n` I/Os each, `late(qd)` of them over the target.
    fn drive(s: &mut LatSearch, t: &mut u64, n: u64, late: impl Fn(u32) -> u64) -> Step {
        let k = late(s.qd);
        for i in 0..n {
            let lat = if i < k { 200_000 } else { 50_000 };
            match s.completed(lat) {
                Step::Go => {}
                other => return other,
            }
        }
        *t += 10 * MS;
        s.check(*t)
    }

    #[test]
    fn doubles_up_to_iodepth_then_settles_and_ends() {
        let mut t = 0;
        let mut s = LatSearch::new(spec(100.0, false), 16, t);
        let mut depths = vec![s.qd];
        let mut steps = vec![];
        for _ in 0..10 {
            let st = drive(&mut s, &mut t, 100, |_| 0);
            if st == Step::FinalRun {
                s.new_cycle(t);
            }
            steps.push(st);
            depths.push(s.qd);
            if st == Step::Done {
                break;
            }
        }
        assert_eq!(depths, vec![1, 2, 4, 8, 16, 16, 16]);
        assert_eq!(
            steps,
            vec![
                Step::Go,
                Step::Go,
                Step::Go,
                Step::Go,
                Step::FinalRun,
                Step::Done
            ]
        );
    }

    #[test]
    fn a_late_io_at_100_percent_halves_back_and_bisects() {
        let mut t = 0;
        // Depths above 5 are too slow.
        let late = |qd: u32| if qd > 5 { 1 } else { 0 };
        let mut s = LatSearch::new(spec(100.0, false), 64, t);
        let mut trace = vec![];
        for _ in 0..40 {
            let st = drive(&mut s, &mut t, 50, late);
            trace.push((st, s.qd));
            match st {
                Step::Quiesce | Step::FinalRun => s.new_cycle(t),
                Step::Done => break,
                _ => {}
            }
        }
        // 1 → 2 → 4 → 8 (late: down halfway to 4 → 6, late → 5), then 5
        // holds as the last depth that met the target.
        let depths: Vec<u32> = trace.iter().map(|x| x.1).collect();
        assert_eq!(&depths[..6], &[2, 4, 8, 6, 5, 5]);
        assert_eq!(trace.last().unwrap().0, Step::Done);
        assert_eq!(s.qd, 5);
        // Every later depth stays at or under the answer's neighbour.
        assert!(depths.iter().skip(3).all(|&d| d <= 8));
    }

    #[test]
    fn a_percentile_tolerates_a_share_of_late_ios() {
        let mut t = 0;
        let mut s = LatSearch::new(spec(99.0, false), 8, t);
        // 1 late in 100 is 99 %: a success.
        assert_eq!(drive(&mut s, &mut t, 100, |_| 1), Step::Go);
        assert_eq!(s.qd, 2);
        // 2 late in 100: a failure, back to 1 after draining.
        assert_eq!(drive(&mut s, &mut t, 100, |_| 2), Step::Quiesce);
        assert_eq!(s.qd, 1);
        s.new_cycle(t);
        // At depth 1 a failed window is no error: the search stays.
        assert_eq!(drive(&mut s, &mut t, 100, |_| 50), Step::Go);
        assert_eq!(s.qd, 1);
    }

    #[test]
    fn a_timeout_under_a_target_is_said_to_be_the_searchs() {
        let on = spec(100.0, false);
        let e = error_words(&on, libc::ETIMEDOUT);
        assert!(e.contains("latency_target (100000 ns)"), "{e}");
        assert!(e.contains("os error 110"), "{e}");
        assert!(!error_words(&on, libc::EIO).contains("latency_target"));
        assert!(!error_words(&LatSpec::default(), libc::ETIMEDOUT).contains("latency_target"));
    }

    #[test]
    fn depth_one_over_target_at_100_percent_is_fatal() {
        let mut s = LatSearch::new(spec(100.0, false), 8, 0);
        assert_eq!(s.completed(50_000), Step::Go);
        assert_eq!(s.completed(100_001), Step::Fatal);
    }

    #[test]
    fn latency_run_keeps_adjusting_and_never_ends() {
        let mut t = 0;
        let mut s = LatSearch::new(spec(100.0, true), 4, t);
        for _ in 0..20 {
            let st = drive(&mut s, &mut t, 10, |_| 0);
            assert_eq!(st, Step::Go);
        }
        assert_eq!(s.qd, 4);
        assert!(!s.end_run);
    }

    #[test]
    fn an_empty_window_fails() {
        let mut s = LatSearch::new(spec(100.0, false), 8, 0);
        assert_eq!(s.check(20 * MS), Step::Go);
        assert_eq!(s.qd, 1);
        s.completed(1);
        assert_eq!(s.check(21 * MS), Step::Go);
        assert_eq!(s.qd, 2);
        assert_eq!(s.check(40 * MS), Step::Quiesce);
        assert_eq!(s.qd, 1);
    }

    #[test]
    fn values_parse_as_fio_and_bad_ones_name_the_key() {
        let mut l = LatSpec::default();
        l.set("latency_target", "500000").unwrap();
        assert_eq!(l.target_ns, 500_000_000);
        l.set("latency_target", "2ms").unwrap();
        assert_eq!(l.target_ns, 2_000_000);
        l.set("latency_window", "5000000").unwrap();
        assert_eq!(l.window, Duration::from_secs(5));
        l.set("latency_percentile", "99.9").unwrap();
        assert_eq!(l.percentile, 99.9);
        l.set("latency_run", "1").unwrap();
        assert!(l.run && l.enabled());
        for (k, v) in [
            ("latency_target", "soon"),
            ("latency_window", "-1"),
            ("latency_percentile", "101"),
            ("latency_percentile", "x"),
            ("latency_run", "maybe"),
        ] {
            let e = l.set(k, v).unwrap_err().to_string();
            assert!(e.contains(k), "{e}");
        }
    }
}

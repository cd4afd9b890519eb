//! fio's steady-state job termination: `steadystate`/`ss`,
//! `steadystate_duration`/`ss_dur`, `steadystate_ramp_time`/`ss_ramp`,
//! `steadystate_check_interval`/`ss_interval`.
//!
//! Every check interval (1 s) the job's IOPS and bandwidth over the
//! interval are recorded into a rolling window of `ss_dur` worth of
//! intervals; recording starts one interval after `ss_ramp`. Once the
//! window is full, each new value judges it by the rule (fio's criteria
//! on the shared detector, [`drivelab_stats::steady::fio_check`]); when it
//! holds, the job ends, as attained. With `group_reporting` the group is
//! judged as one: the last job of the group sums the group's counters
//! (which every job publishes once per loop turn anyway) and ends them all.
//! Without `ss_dur` nothing is watched (fio's default: 0, off).
//!
//! The check runs from the job loop's once-per-turn hook: a clock
//! comparison per turn, and once per interval a few additions over the
//! window, whose buffers are allocated when the job starts.

use crate::spec::decl::{opt, OptionDecl};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use drivelab_stats::steady::{fio_check, FioCheck, FioMetric, FioRule};

use crate::job::types::LiveCounters;
use crate::SpecError;

/// A job's steady-state options.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SsSpec {
    /// The criterion and limit (fio's default `iops_slope:0.01%`).
    pub rule: FioRule,
    /// The rolling window (0: off).
    pub duration: Duration,
    /// Run this long before recording.
    pub ramp: Duration,
    /// One value per this long (1 s).
    pub interval: Duration,
}

impl Default for SsSpec {
    fn default() -> Self {
        SsSpec {
            rule: FioRule {
                metric: FioMetric::Iops,
                slope: true,
                limit: 0.01,
                percent: true,
            },
            duration: Duration::ZERO,
            ramp: Duration::ZERO,
            interval: Duration::from_secs(1),
        }
    }
}

impl SsSpec {
    /// Set one of [`Self::OPTIONS`] (bare times are seconds).
    pub fn set(&mut self, key: &str, v: &str) -> Result<(), SpecError> {
        match key {
            "steadystate" => {
                self.rule = FioRule::parse(v).map_err(|expect| SpecError::BadValue {
                    key: key.to_string(),
                    value: v.to_string(),
                    expect,
                })?
            }
            "steadystate_duration" => self.duration = crate::spec::size::parse_duration(key, v)?,
            "steadystate_ramp_time" => self.ramp = crate::spec::size::parse_duration(key, v)?,
            "steadystate_check_interval" => {
                let i = crate::spec::size::parse_duration(key, v)?;
                if i < Duration::from_secs(1) {
                    return Err(SpecError::BadValue {
                        key: key.to_string(),
                        value: v.to_string(),
                        expect: "a time of at least 1s (as fio)".to_string(),
                    });
                }
                self.interval = i;
            }
            _ => unreachable!("steadystate::SsSpec::set called with {key}"),
        }
        Ok(())
    }

    /// Whether steady state is watched (`ss_dur` given).
    pub fn enabled(&self) -> bool {
        !self.duration.is_zero()
    }

    /// The number of values in the window.
    pub fn intervals(&self) -> usize {
        (self.duration.as_nanos() / self.interval.as_nanos().max(1)) as usize
    }
}

/// What a job of a steady-state run is given.
#[derive(Debug, Clone)]
pub struct SteadyJob {
    /// The options.
    pub spec: SsSpec,
    /// This job judges (the job itself, or the last job of a reporting
    /// group); the others only watch `end`.
    pub judge: bool,
    /// The group's jobs' counters, summed by the judge (empty: the job's
    /// own counts).
    pub members: Vec<Arc<LiveCounters>>,
    /// Set by the judge when steady state is attained: every job of the
    /// group ends.
    pub end: Arc<AtomicBool>,
}

impl SteadyJob {
    /// A job that judges its own counts.
    pub fn own(spec: SsSpec) -> SteadyJob {
        SteadyJob {
            spec,
            judge: true,
            members: Vec::new(),
            end: Arc::default(),
        }
    }

    /// The steady-state roles of one stonewall group's jobs: with
    /// `group_reporting` the last job of each reporting group judges the
    /// group's summed counters; otherwise each job judges itself.
    /// `jobs` is (reporting group, group_reporting, spec) per job.
    pub fn for_group(
        jobs: &[(u32, bool, SsSpec)],
        live: &[Arc<LiveCounters>],
    ) -> Vec<Option<SteadyJob>> {
        let mut out: Vec<Option<SteadyJob>> = jobs
            .iter()
            .map(|&(_, _, s)| s.enabled().then(|| SteadyJob::own(s)))
            .collect();
        let mut i = 0;
        while i < jobs.len() {
            let (g, grouped, _) = jobs[i];
            let mut j = i + 1;
            while grouped && j < jobs.len() && jobs[j].0 == g && jobs[j].1 {
                j += 1;
            }
            if grouped && out[i].is_some() {
                let end: Arc<AtomicBool> = Arc::default();
                for (k, o) in out.iter_mut().enumerate().take(j).skip(i) {
                    if let Some(s) = o {
                        s.judge = k == j - 1;
                        s.end = end.clone();
                        if s.judge {
                            s.members = live[i..j].to_vec();
                        }
                    }
                }
            }
            i = j;
        }
        out
    }
}

/// The steady-state figures of a job, as fio reports them.
#[derive(Debug, Clone, PartialEq)]
pub struct SteadyOutcome {
    /// The rule.
    pub rule: FioRule,
    /// `ss_dur`, whole seconds.
    pub duration_s: u64,
    /// Steady state was attained (the job ended on it).
    pub attained: bool,
    /// The last judgement (None: the window never filled).
    pub last: Option<FioCheck>,
    /// IOPS per interval, oldest first; zeros where the window was not
    /// filled.
    pub iops: Vec<u64>,
    /// Bytes/s per interval, the same way.
    pub bw: Vec<u64>,
}

impl SteadyOutcome {
    /// fio's `iops_mean`: the sum over the whole window (zeros included)
    /// over its length, rounded down.
    pub fn iops_mean(&self) -> u64 {
        self.iops.iter().sum::<u64>() / self.iops.len().max(1) as u64
    }

    /// fio's `bw_mean`, bytes/s, the same way.
    pub fn bw_mean(&self) -> u64 {
        self.bw.iter().sum::<u64>() / self.bw.len().max(1) as u64
    }
}

/// A judging job's running state.
#[derive(Debug)]
pub struct SteadyState {
    job: SteadyJob,
    n: usize,
    interval_ns: u64,
    ramp_end: u64,
    next_check: u64,
    prev_time: u64,
    prev: (u64, u64),
    iops: Vec<u64>,
    bw: Vec<u64>,
    /// Ring: next slot to write, values held.
    tail: usize,
    len: usize,
    scratch: Vec<f64>,
    last: Option<FioCheck>,
    attained: bool,
}

impl SteadyState {
    /// Start watching at `now` (the job's measurement start) with the
    /// counts `(ios, bytes)` at that time.
    pub fn new(job: SteadyJob, now: u64, counts: (u64, u64)) -> SteadyState {
        let n = job.spec.intervals().max(1);
        let interval_ns = job.spec.interval.as_nanos() as u64;
        // Recording starts one interval after the ramp (fio).
        let ramp_end = if job.spec.ramp.is_zero() {
            now
        } else {
            now + job.spec.ramp.as_nanos() as u64 + interval_ns
        };
        SteadyState {
            job,
            n,
            interval_ns,
            ramp_end,
            next_check: now + interval_ns,
            prev_time: now,
            prev: counts,
            iops: vec![0; n],
            bw: vec![0; n],
            tail: 0,
            len: 0,
            scratch: Vec::with_capacity(n),
            last: None,
            attained: false,
        }
    }

    /// Start over at `now` (the job's statistics were reset).
    pub fn restart(&mut self, now: u64, counts: (u64, u64)) {
        let job = self.job.clone();
        *self = SteadyState::new(job, now, counts);
    }

    /// The group's ended (attained by its judge).
    #[inline]
    pub fn group_ended(job: &SteadyJob) -> bool {
        job.end.load(Ordering::Relaxed)
    }

    /// The counts to judge: the group's summed, or None for the job's own.
    pub fn member_counts(&self) -> Option<(u64, u64)> {
        if self.job.members.is_empty() {
            return None;
        }
        let mut ios = 0;
        let mut bytes = 0;
        for m in &self.job.members {
            for k in 0..3 {
                ios += m.ios[k].load(Ordering::Relaxed);
                bytes += m.bytes[k].load(Ordering::Relaxed);
            }
        }
        Some((ios, bytes))
    }

    /// Whether a check is due at `now`.
    #[inline]
    pub fn due(&self, now: u64) -> bool {
        !self.attained && now >= self.next_check
    }

    /// A check at `now` with the counts `(ios, bytes)`: true when steady
    /// state is attained (the job, or its group, ends).
    pub fn check(&mut self, now: u64, counts: (u64, u64)) -> bool {
        while self.next_check <= now {
            self.next_check += self.interval_ns;
        }
        let dt = now.saturating_sub(self.prev_time).max(1);
        let per_s = |d: u64| (u128::from(d) * 1_000_000_000 / u128::from(dt)) as u64;
        let iops = per_s(counts.0.saturating_sub(self.prev.0));
        let bw = per_s(counts.1.saturating_sub(self.prev.1));
        self.prev_time = now;
        self.prev = counts;
        if now < self.ramp_end {
            return false;
        }
        self.iops[self.tail] = iops;
        self.bw[self.tail] = bw;
        self.tail = (self.tail + 1) % self.n;
        self.len = (self.len + 1).min(self.n);
        if self.len < self.n {
            return false;
        }
        let src = match self.job.spec.rule.metric {
            FioMetric::Iops => &self.iops,
            FioMetric::Bw => &self.bw,
        };
        self.scratch.clear();
        // Oldest first: the ring is full, so the oldest is at `tail`.
        for k in 0..self.n {
            self.scratch.push(src[(self.tail + k) % self.n] as f64);
        }
        let c = fio_check(&self.scratch, &self.job.spec.rule);
        self.last = Some(c);
        if c.met {
            self.attained = true;
            self.job.end.store(true, Ordering::Relaxed);
        }
        self.attained
    }

    /// What the job reports.
    pub fn outcome(&self) -> SteadyOutcome {
        let order = |v: &[u64]| -> Vec<u64> {
            if self.len < self.n {
                v.to_vec()
            } else {
                (0..self.n).map(|k| v[(self.tail + k) % self.n]).collect()
            }
        };
        SteadyOutcome {
            rule: self.job.spec.rule,
            duration_s: self.job.spec.duration.as_secs(),
            attained: self.attained,
            last: self.last,
            iops: order(&self.iops),
            bw: order(&self.bw),
        }
    }
}

/// fio's `steadystate` JSON object for a job's outcome. fio prints its
/// limit and criterion as C floats with six decimals.
pub fn report(o: &SteadyOutcome) -> drivelab_report::SteadyStateReport {
    let c = o.last.unwrap_or(FioCheck {
        mean: 0.0,
        slope: 0.0,
        max_deviation: 0.0,
        criterion: 0.0,
        met: false,
    });
    drivelab_report::SteadyStateReport {
        ss: o.rule.fio_string(),
        duration: o.duration_s,
        attained: u8::from(o.attained),
        criterion: format!(
            "{:.6}{}",
            c.criterion as f32,
            if o.rule.percent { "%" } else { "" }
        ),
        max_deviation: c.max_deviation,
        slope: c.slope,
        data: drivelab_report::SteadyStateData {
            bw_mean: o.bw_mean(),
            iops_mean: o.iops_mean(),
            iops: o.iops.clone(),
            bw: o.bw.clone(),
        },
    }
}

impl SsSpec {
    /// The family's options (fio's names and units).
    pub const OPTIONS: &'static [OptionDecl] = &[
        opt!(
            "steadystate",
            ["ss"],
            Text,
            "iops_slope:0.01%",
            "end the job at steady state: iops, iops_slope, bw or bw_slope, ':' and a limit, absolute or N% of the mean (iops_slope:0.1%); needs steadystate_duration"
        ),
        opt!(
            "steadystate_duration",
            ["ss_dur"],
            Time,
            "0 (off)",
            "the rolling window steady state is judged over"
        ),
        opt!(
            "steadystate_ramp_time",
            ["ss_ramp"],
            Time,
            "0",
            "run this long before recording steady-state values"
        ),
        opt!(
            "steadystate_check_interval",
            ["ss_interval"],
            Time,
            "1s",
            "one steady-state value per this long (at least 1s; ss_dur a multiple of it)"
        ),
    ];
}

impl crate::spec::family::OptionFamily for SsSpec {
    fn options(&self) -> &'static [OptionDecl] {
        Self::OPTIONS
    }

    fn set(&mut self, key: &'static str, v: &str) -> Result<(), SpecError> {
        SsSpec::set(self, key, v)
    }

    /// The window must hold a whole number of intervals, more than one.
    fn check(&self) -> Result<(), SpecError> {
        if !self.enabled() {
            return Ok(());
        }
        let (d, i) = (self.duration.as_nanos(), self.interval.as_nanos());
        if d % i != 0 || d <= i {
            return Err(SpecError::Invalid(format!(
                "steadystate_duration ({:?}) must be a whole multiple of steadystate_check_interval ({:?}), more than one: give e.g. ss_dur=30s",
                self.duration, self.interval
            )));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::family::OptionFamily;

    const S: u64 = 1_000_000_000;

    fn spec(rule: &str, dur: u64, ramp: u64) -> SsSpec {
        let mut s = SsSpec::default();
        s.set("steadystate", rule).unwrap();
        s.set("steadystate_duration", &dur.to_string()).unwrap();
        s.set("steadystate_ramp_time", &ramp.to_string()).unwrap();
        OptionFamily::check(&s).unwrap();
        s
    }

    /// Feed per-second IOPS `rates` (4 KiB I/Os); the second it attains.
    fn feed(s: &mut SteadyState, rates: &[u64]) -> Option<usize> {
        let (mut ios, mut t) = (0u64, 0u64);
        for (k, r) in rates.iter().enumerate() {
            ios += r;
            t += S;
            assert!(s.due(t));
            if s.check(t, (ios, ios * 4096)) {
                return Some(k + 1);
            }
        }
        None
    }

    #[test]
    fn a_flat_rate_attains_once_the_window_is_full() {
        let mut s = SteadyState::new(SteadyJob::own(spec("iops:10%", 3, 0)), 0, (0, 0));
        assert_eq!(feed(&mut s, &[500, 498, 502, 500, 500]), Some(3));
        let o = s.outcome();
        assert!(o.attained);
        assert_eq!(o.iops, vec![500, 498, 502]);
        assert_eq!(o.bw, vec![500 * 4096, 498 * 4096, 502 * 4096]);
        assert_eq!((o.iops_mean(), o.duration_s), (500, 3));
        let c = o.last.unwrap();
        assert!((c.criterion - 0.4).abs() < 1e-9 && c.slope == 0.0);
    }

    #[test]
    fn a_ramping_rate_never_attains_and_reports_the_last_window() {
        let mut s = SteadyState::new(SteadyJob::own(spec("iops_slope:1%", 3, 0)), 0, (0, 0));
        assert_eq!(feed(&mut s, &[100, 200, 300, 400, 500]), None);
        let o = s.outcome();
        assert!(!o.attained);
        assert_eq!(o.iops, vec![300, 400, 500]);
        assert_eq!(o.iops_mean(), 400);
        assert!((o.last.unwrap().criterion - 25.0).abs() < 1e-9);
    }

    #[test]
    fn the_ramp_delays_recording_by_one_more_interval() {
        // ss_ramp=2: the checks at 1 s and 2 s are not recorded;
        // recording starts at ramp + one interval (3 s).
        let mut s = SteadyState::new(SteadyJob::own(spec("iops:1", 2, 2)), 0, (0, 0));
        assert_eq!(feed(&mut s, &[9, 50, 7, 100, 100]), Some(5));
        assert_eq!(s.outcome().iops, vec![100, 100]);
        // An unfilled window reports zeros after what it holds.
        let mut s = SteadyState::new(SteadyJob::own(spec("iops:1", 4, 0)), 0, (0, 0));
        assert_eq!(feed(&mut s, &[10, 20]), None);
        let o = s.outcome();
        assert_eq!(o.iops, vec![10, 20, 0, 0]);
        assert_eq!(o.iops_mean(), 7);
        assert!(o.last.is_none());
    }

    #[test]
    fn a_group_is_judged_by_its_last_job_on_summed_counters() {
        let live: Vec<Arc<LiveCounters>> = (0..3).map(|_| Arc::default()).collect();
        let s = spec("iops:5%", 2, 0);
        let off = SsSpec::default();
        let roles = SteadyJob::for_group(&[(0, true, s), (0, true, s), (1, false, off)], &live);
        let (a, b) = (roles[0].as_ref().unwrap(), roles[1].as_ref().unwrap());
        assert!(!a.judge && b.judge && roles[2].is_none());
        assert!(Arc::ptr_eq(&a.end, &b.end));
        assert_eq!(b.members.len(), 2);
        let mut st = SteadyState::new(b.clone(), 0, (0, 0));
        for (t, n) in [(1, 100), (2, 200)] {
            live[0].ios[0].store(n, Ordering::Relaxed);
            live[1].ios[1].store(n * 3, Ordering::Relaxed);
            let c = st.member_counts().unwrap();
            assert_eq!(c.0, n * 4);
            if t == 2 {
                assert!(st.check(t * S, c));
            } else {
                assert!(!st.check(t * S, c));
            }
        }
        assert!(SteadyState::group_ended(a));
        // Without group_reporting each job judges itself.
        let roles = SteadyJob::for_group(&[(0, false, s), (0, false, s)], &live[..2]);
        assert!(roles.iter().all(|r| r.as_ref().unwrap().judge));
    }

    #[test]
    fn bad_values_name_the_key() {
        let mut s = SsSpec::default();
        for (k, v) in [
            ("steadystate", "lat:1%"),
            ("steadystate", "iops"),
            ("steadystate_duration", "soon"),
            ("steadystate_ramp_time", "x"),
            ("steadystate_check_interval", "100ms"),
        ] {
            let e = s.set(k, v).unwrap_err().to_string();
            assert!(e.contains(k), "{e}");
        }
        s.set("steadystate_duration", "1500ms").unwrap();
        let e = OptionFamily::check(&s).unwrap_err().to_string();
        assert!(e.contains("steadystate_duration"), "{e}");
        s.set("steadystate_duration", "1s").unwrap();
        assert!(OptionFamily::check(&s).is_err());
        s.set("steadystate_duration", "30s").unwrap();
        OptionFamily::check(&s).unwrap();
        assert_eq!(s.intervals(), 30);
    }
}

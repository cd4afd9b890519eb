//! What the cpuio and exec engines share while they run: when the job is to
//! end (`End`) and the count of its zero-byte "I/Os" (`Tally`), kept
//! apart from [`crate::engines::noio`]'s dispatch so that the engines and
//! the dispatch do not import each other.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use drivelab_stats::TimeSeries;

use crate::job::io_loop::JobConfig;
use crate::job::outcome::{JobError, JobOutcome};
use crate::plan::model::PlannedJob;

/// When a job's work ends: its runtime's end, or the run stopped or its
/// group ended (`exitall`).
pub(crate) struct End<'a> {
    /// The end of the runtime (None: no runtime).
    pub(crate) deadline: Option<Instant>,
    ended: &'a dyn Fn() -> bool,
}

impl<'a> End<'a> {
    /// An end at `deadline` or when `ended` says so.
    pub(crate) fn new(deadline: Option<Instant>, ended: &'a dyn Fn() -> bool) -> End<'a> {
        End { deadline, ended }
    }

    /// Whether the job is to end now.
    pub(crate) fn reached(&self, now: Instant) -> bool {
        (self.ended)() || self.deadline.is_some_and(|d| now >= d)
    }

    /// Sleep `d`, cut at the deadline and in slices of at most 20 ms so
    /// that a stop is seen soon.
    pub(crate) fn sleep(&self, d: Duration) {
        let until = Instant::now() + d;
        let until = self.deadline.map_or(until, |dl| until.min(dl));
        loop {
            let now = Instant::now();
            if now >= until || (self.ended)() {
                return;
            }
            std::thread::sleep((until - now).min(Duration::from_millis(20)));
        }
    }
}

/// The job's zero-byte "I/Os" counted as fio counts them (see the module
/// docs), with the thread's CPU time from its start.
pub(crate) struct Tally<'a> {
    /// When the job started.
    pub(crate) start: Instant,
    outcome: JobOutcome,
    series: TimeSeries,
    progress: &'a AtomicU64,
    live: Option<std::sync::Arc<crate::job::types::LiveCounters>>,
    status: Option<std::sync::Arc<crate::run::status::StatusCell>>,
    usage: drivelab_engine::sys::ThreadUsage,
    faults: (u64, u64),
}

impl<'a> Tally<'a> {
    pub(crate) fn new(
        job: &PlannedJob,
        cfg: &JobConfig,
        progress: &'a AtomicU64,
    ) -> Result<Self, JobError> {
        let start = Instant::now();
        let interval = cfg.log_interval.as_nanos().max(1) as u64;
        Ok(Tally {
            start,
            outcome: crate::run::status::nothing_done(job),
            series: TimeSeries::new(interval, start)
                .map_err(|e| JobError::Config(e.to_string()))?,
            progress,
            live: cfg.live.clone(),
            status: cfg.status.clone(),
            usage: drivelab_engine::sys::thread_usage(),
            faults: crate::job::samples::thread_faults(),
        })
    }

    /// One "I/O" that took from `from` to `to`.
    pub(crate) fn record(&mut self, from: Instant, to: Instant) {
        let lat = to.saturating_duration_since(from).as_nanos() as u64;
        let t = to.saturating_duration_since(self.start).as_nanos() as u64;
        let o = &mut self.outcome;
        let d = &mut o.dirs[0];
        d.ios += 1;
        d.lat.record(lat);
        d.moments.record(lat as f64);
        o.per_target[0][0].0 += 1;
        let s = &mut o.samples;
        s.depth.queued(1);
        s.depth.reaped();
        s.depth.turn();
        while s.rates.due(t) {
            s.rates.close();
        }
        s.rates.add(0, 0);
        s.lat.record(lat);
        self.series.record(t, lat, 0);
        self.progress.store(d.ios, Ordering::Relaxed);
        if let Some(l) = &self.live {
            l.ios[0].store(d.ios, Ordering::Relaxed);
        }
        // --status-interval: a copy of what the job did so far (the cell
        // puts in the CPU time and faults).
        if let Some(c) = self.status.as_ref().filter(|c| c.due()) {
            let mut o = self.outcome.clone();
            o.runtime_ns = t;
            o.samples.elapsed_ns = t;
            o.series = self.series.clone().finish(t);
            c.answer(o);
        }
    }

    /// The outcome, timed and with the thread's CPU use to now.
    pub(crate) fn finish(self) -> JobOutcome {
        let mut o = self.outcome;
        let elapsed = self.start.elapsed().as_nanos() as u64;
        o.runtime_ns = elapsed;
        o.samples.elapsed_ns = elapsed;
        o.series = self.series.finish(elapsed);
        let u = drivelab_engine::sys::thread_usage();
        o.cpu_user_ns = u.user_ns.saturating_sub(self.usage.user_ns);
        o.cpu_sys_ns = u.system_ns.saturating_sub(self.usage.system_ns);
        o.ctx_switches = u
            .context_switches
            .saturating_sub(self.usage.context_switches);
        let (minf, majf) = crate::job::samples::thread_faults();
        o.samples.minf = minf.saturating_sub(self.faults.0);
        o.samples.majf = majf.saturating_sub(self.faults.1);
        o
    }
}

//! fio's `--status-interval`: every so often, the full statistics of every
//! job so far (cumulative from its start, as fio's are), built into the same
//! [`RunReport`](drivelab_report::RunReport) as the final result by the same
//! report builder, so a snapshot has exactly the final result's shape.
//!
//! How a snapshot is taken without slowing the job loop:
//!
//! - Each job has a [`StatusCell`]. The coordinator (the thread that also
//!   samples the devices and draws the progress line) *asks* for a snapshot
//!   by raising the cell's asked generation.
//! - The job thread looks at the cell once per loop turn, where it already
//!   publishes its progress counters: one relaxed atomic load comparing the
//!   asked generation with the answered one. Nothing per I/O, no lock.
//! - When asked, the job thread copies its statistics at that turn boundary
//!   (histograms, moments, rate and depth samples, the series; CPU time and
//!   page faults read for its own thread), puts the copy in the cell's slot
//!   (a mutex taken once per snapshot, never by the I/O path) and marks the
//!   generation answered. The copy is consistent (taken between turns, by the
//!   only thread that writes the statistics); it allocates once per snapshot
//!   and job, never per I/O.
//! - The coordinator waits for the answers of the jobs inside their loop, at
//!   most [`ANSWER_WAIT`] (a job sleeping out a long think time, or blocked
//!   in the kernel, does not turn: its last copy is used). A finished job's
//!   cell holds its final outcome; a job not started yet (a later stonewall
//!   group, `startdelay`, `wait_for`) reports nothing done, as fio's do.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use drivelab_report::RunReport;

use crate::job::outcome::{DirStats, JobOutcome};
use crate::job::samples::JobSamples;

/// How long the coordinator waits for the running jobs to answer a
/// snapshot request before using their last copy.
pub const ANSWER_WAIT: Duration = Duration::from_millis(250);

/// The shortest `--status-interval` (fio refuses anything under 1 ms).
pub const MIN_INTERVAL: Duration = Duration::from_millis(1);

/// `--status-interval`: how often, and what to do with each snapshot.
pub struct StatusOptions<'a> {
    /// Time between snapshots, from the start of the first job group.
    pub every: Duration,
    /// Called with each snapshot, from the coordinating thread.
    pub on_status: &'a mut dyn FnMut(&RunReport),
}

/// The job thread's CPU time and page faults when its loop started, so a
/// snapshot reports what the loop used so far.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Baseline {
    pub(crate) user_ns: u64,
    pub(crate) sys_ns: u64,
    pub(crate) ctx: u64,
    pub(crate) minf: u64,
    pub(crate) majf: u64,
}

impl Baseline {
    /// The calling thread's figures now.
    pub(crate) fn now() -> Baseline {
        let u = drivelab_engine::sys::thread_usage();
        let (minf, majf) = crate::job::samples::thread_faults();
        Baseline {
            user_ns: u.user_ns,
            sys_ns: u.system_ns,
            ctx: u.context_switches,
            minf,
            majf,
        }
    }

    /// Put what the thread used since `self` into `o`.
    pub(crate) fn since_into(&self, o: &mut JobOutcome) {
        let n = Baseline::now();
        o.cpu_user_ns = n.user_ns.saturating_sub(self.user_ns);
        o.cpu_sys_ns = n.sys_ns.saturating_sub(self.sys_ns);
        o.ctx_switches = n.ctx.saturating_sub(self.ctx);
        o.samples.minf = n.minf.saturating_sub(self.minf);
        o.samples.majf = n.majf.saturating_sub(self.majf);
    }
}

/// Where one job answers snapshot requests (see the module docs).
#[derive(Debug, Default)]
pub struct StatusCell {
    asked: AtomicU64,
    answered: AtomicU64,
    /// Inside its loop, so it answers requests.
    running: AtomicBool,
    baseline: Mutex<Baseline>,
    latest: Mutex<Option<JobOutcome>>,
}

impl StatusCell {
    fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
        // A job thread that panicked leaves a copy that is still whole.
        m.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The job thread enters its loop: from now on it answers.
    pub(crate) fn enter(&self) {
        *Self::lock(&self.baseline) = Baseline::now();
        self.running.store(true, Ordering::Release);
    }

    /// Whether a snapshot was asked for and not yet answered. Called once
    /// per loop turn: one relaxed load each, nothing else.
    #[inline]
    pub(crate) fn due(&self) -> bool {
        self.asked.load(Ordering::Relaxed) != self.answered.load(Ordering::Relaxed)
    }

    /// The job thread's answer: `o` is its statistics so far, CPU time and
    /// page faults are filled in here.
    pub(crate) fn answer(&self, mut o: JobOutcome) {
        let asked = self.asked.load(Ordering::Acquire);
        Self::lock(&self.baseline).since_into(&mut o);
        *Self::lock(&self.latest) = Some(o);
        self.answered.store(asked, Ordering::Release);
    }

    /// The job left its loop with `o` (what it did, before any read-back).
    pub(crate) fn leave(&self, o: &JobOutcome) {
        *Self::lock(&self.latest) = Some(o.clone());
        self.running.store(false, Ordering::Release);
        self.answered
            .store(self.asked.load(Ordering::Acquire), Ordering::Release);
    }

    /// The job's thread is done: with its final outcome (after verify and
    /// ratemin), which later snapshots show, or None when it failed.
    pub fn finish(&self, o: Option<&JobOutcome>) {
        if let Some(o) = o {
            *Self::lock(&self.latest) = Some(o.clone());
        }
        self.running.store(false, Ordering::Release);
    }

    /// Ask for a snapshot; returns the generation to wait for.
    fn ask(&self) -> u64 {
        self.asked.fetch_add(1, Ordering::AcqRel) + 1
    }

    /// Whether the job has answered generation `g` (or need not: it is not
    /// inside its loop).
    fn answered(&self, g: u64) -> bool {
        !self.running.load(Ordering::Acquire) || self.answered.load(Ordering::Acquire) >= g
    }

    /// The job's last copy, if it has one.
    fn latest(&self) -> Option<JobOutcome> {
        Self::lock(&self.latest).clone()
    }
}

/// The coordinator's side: when the next snapshot is due and whether the
/// jobs asked have answered.
pub(crate) struct StatusClock {
    every: Duration,
    /// When the next snapshot is due (None until the first group starts).
    next: Option<Instant>,
    /// A request in flight: its generation per cell and its deadline.
    pending: Option<(Vec<u64>, Instant)>,
}

impl StatusClock {
    pub(crate) fn new(every: Duration) -> StatusClock {
        StatusClock {
            every,
            next: None,
            pending: None,
        }
    }

    /// Snapshots fall due every interval from `t`, the start of the run
    /// (fio's clock starts before its jobs are set up too).
    pub(crate) fn start(&mut self, t: Instant) {
        self.next.get_or_insert(t + self.every);
    }

    /// A new stonewall group starts: a request left from the group before
    /// is dropped (its jobs have finished).
    pub(crate) fn new_group(&mut self) {
        self.pending = None;
    }

    /// Called on every pass of the coordinator's loop with the current
    /// group's cells: asks when due, and returns true once a snapshot is
    /// ready to build (every job asked answered, or the wait ran out).
    pub(crate) fn poll(&mut self, now: Instant, cells: &[Arc<StatusCell>]) -> bool {
        if let Some((gens, deadline)) = &self.pending {
            if now >= *deadline || cells.iter().zip(gens).all(|(c, &g)| c.answered(g)) {
                self.pending = None;
                return true;
            }
            return false;
        }
        let Some(next) = self.next else { return false };
        if now < next {
            return false;
        }
        // The next one a whole interval after this one's due time; a late
        // one (a slow report) is not made up by a burst.
        let mut n = next + self.every;
        while n <= now {
            n += self.every;
        }
        self.next = Some(n);
        let gens = cells.iter().map(|c| c.ask()).collect();
        self.pending = Some((gens, now + ANSWER_WAIT));
        false
    }

    /// How long the coordinator may sleep before it must poll again.
    pub(crate) fn sleep_cap(&self, now: Instant) -> Duration {
        let until = match (&self.pending, self.next) {
            (Some(_), _) => return Duration::from_millis(2),
            (None, Some(n)) => n.saturating_duration_since(now),
            (None, None) => Duration::MAX,
        };
        until.max(Duration::from_millis(1))
    }
}

/// What a job has done so far, from its cell: its latest copy, or nothing
/// done (a job not started yet).
pub(crate) fn so_far(cell: &StatusCell, empty: impl FnOnce() -> JobOutcome) -> JobOutcome {
    cell.latest().unwrap_or_else(empty)
}

/// An outcome of nothing done: a job that has not started yet, or that
/// `exit_what=all` kept from starting (fio still lists it, with no I/O).
pub(crate) fn nothing_done(job: &crate::plan::model::PlannedJob) -> JobOutcome {
    nothing_done_with(
        job.spec.log_interval.as_nanos().max(1) as u64,
        job.spec.logs.sample_window_ms(),
        job.targets.len(),
    )
}

/// [`nothing_done`] from its parts: the series interval (ns), the
/// sample window (ms) and the number of targets.
pub(crate) fn nothing_done_with(interval_ns: u64, window_ms: u64, targets: usize) -> JobOutcome {
    let series = drivelab_stats::TimeSeries::new(interval_ns.max(1), Instant::now())
        .map(|s| s.finish(0))
        .unwrap_or_else(|_| unreachable!("the interval is not zero"));
    JobOutcome {
        dirs: std::array::from_fn(|_| DirStats::new(false)),
        runtime_ns: 0,
        per_target: vec![[(0, 0); 3]; targets.max(1)],
        series,
        errors: Vec::new(),
        short_ios: [0; 3],
        drop_ios: [0; 3],
        interrupted: false,
        cpu_user_ns: 0,
        cpu_sys_ns: 0,
        ctx_switches: 0,
        verify_failure: None,
        samples: JobSamples::new(window_ms),
        latency_depth: None,
        steady: None,
        zone_resets: None,
        program: None,
        err_count: Default::default(),
        verify_left: None,
        trimmed: None,
        failed_writes: Vec::new(),
        verify_stopped: false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_request_is_answered_once_and_only_when_asked() {
        let c = Arc::new(StatusCell::default());
        assert!(!c.due());
        c.enter();
        let mut clock = StatusClock::new(Duration::from_millis(10));
        let t0 = Instant::now();
        clock.start(t0);
        let cells = [c.clone()];
        // Not due yet: nothing asked.
        assert!(!clock.poll(t0, &cells));
        assert!(!c.due());
        // Due: asked, not ready until the job answers.
        assert!(!clock.poll(t0 + Duration::from_millis(10), &cells));
        assert!(c.due());
        assert!(!clock.poll(t0 + Duration::from_millis(11), &cells));
        let mut o = nothing_done_with(1_000_000_000, 500, 1);
        o.dirs[0].ios = 7;
        c.answer(o);
        assert!(!c.due());
        assert!(clock.poll(t0 + Duration::from_millis(12), &cells));
        assert_eq!(
            so_far(&c, || nothing_done_with(1_000_000_000, 500, 1)).dirs[0].ios,
            7
        );
        // The next one a whole interval later, not at once.
        assert!(!clock.poll(t0 + Duration::from_millis(13), &cells));
        assert!(!c.due());
    }

    #[test]
    fn a_job_that_does_not_answer_is_waited_for_a_bounded_time() {
        let c = Arc::new(StatusCell::default());
        c.enter();
        let mut clock = StatusClock::new(Duration::from_secs(1));
        let t0 = Instant::now();
        clock.start(t0);
        let cells = [c.clone()];
        let due = t0 + Duration::from_secs(1);
        assert!(!clock.poll(due, &cells));
        assert!(!clock.poll(due + ANSWER_WAIT / 2, &cells));
        assert!(clock.poll(due + ANSWER_WAIT, &cells));
        // A slow snapshot is not made up by a burst: next due at 2 s.
        assert!(!clock.poll(t0 + Duration::from_millis(1900), &cells));
        assert!(!clock.poll(t0 + Duration::from_secs(2), &cells));
    }

    #[test]
    fn a_job_outside_its_loop_needs_no_answer() {
        let waiting = Arc::new(StatusCell::default());
        let done = Arc::new(StatusCell::default());
        done.enter();
        let mut o = nothing_done_with(1_000_000_000, 500, 1);
        o.dirs[1].bytes = 4096;
        done.leave(&o);
        let mut clock = StatusClock::new(Duration::from_millis(5));
        let t0 = Instant::now();
        clock.start(t0);
        let cells = [waiting.clone(), done.clone()];
        assert!(!clock.poll(t0 + Duration::from_millis(5), &cells));
        assert!(clock.poll(t0 + Duration::from_millis(6), &cells));
        assert_eq!(
            so_far(&done, || nothing_done_with(1_000_000_000, 500, 1)).dirs[1].bytes,
            4096
        );
        assert_eq!(
            so_far(&waiting, || nothing_done_with(1_000_000_000, 500, 1)).dirs[1].bytes,
            0
        );
    }

    /// Run null-engine jobs (`(options, stonewall)`) with snapshots every
    /// `every`; returns the snapshots and the final report.
    fn run_with_snapshots(
        jobs: &[(&[(&str, &str)], bool)],
        every: Duration,
    ) -> (Vec<RunReport>, RunReport) {
        let specs: Vec<(crate::JobSpec, bool)> = jobs
            .iter()
            .map(|(opts, stonewall)| {
                let mut s = crate::JobSpec::default();
                s.set("filename", Some("null-target")).unwrap();
                s.set("ioengine", Some("null")).unwrap();
                for (k, v) in opts.iter() {
                    s.set(k, Some(v)).unwrap();
                }
                (s, *stonewall)
            })
            .collect();
        let p = crate::plan(&specs, &crate::PlanOptions::default()).unwrap();
        let stop = AtomicBool::new(false);
        let mut snaps = Vec::new();
        let mut keep = |r: &RunReport| snaps.push(r.clone());
        let status = StatusOptions {
            every,
            on_status: &mut keep,
        };
        let fin =
            crate::run::execute::execute_with_status(&p, &stop, &mut |_| {}, Some(status)).unwrap();
        (snaps, fin)
    }

    fn ios(r: &RunReport, job: usize) -> u64 {
        let j = &r.jobs[job];
        j.read.total_ios + j.write.total_ios + j.trim.total_ios
    }

    #[test]
    fn snapshots_are_whole_reports_that_only_grow() {
        // 240 I/Os at 800 a second: about 0.3 s, snapshots every 40 ms.
        let job: &[(&str, &str)] = &[
            ("name", "snap"),
            ("size", "960k"),
            ("rw", "randrw"),
            ("rate_iops", "800"),
        ];
        let (snaps, fin) = run_with_snapshots(&[(job, false)], Duration::from_millis(40));
        assert!(!snaps.is_empty());
        assert_eq!(ios(&fin, 0), 240);
        let mut last = 0;
        for s in &snaps {
            assert_eq!(s.jobs.len(), 1);
            assert_eq!(s.jobs[0].jobname, "snap");
            let n = ios(s, 0);
            assert!(n >= last && n <= 240, "{n} after {last}");
            // Bytes, latency counts and runtime agree within a snapshot.
            let j = &s.jobs[0];
            assert_eq!(j.read.io_bytes + j.write.io_bytes, n * 4096);
            assert_eq!(j.read.clat_ns.n + j.write.clat_ns.n, n);
            assert!(j.job_runtime <= fin.jobs[0].job_runtime);
            last = n;
        }
    }

    #[test]
    fn a_later_group_shows_as_not_started_until_it_runs() {
        let first: &[(&str, &str)] = &[("name", "one"), ("size", "400k"), ("rate_iops", "500")];
        let second: &[(&str, &str)] = &[("name", "two"), ("size", "400k"), ("rate_iops", "500")];
        let (snaps, fin) =
            run_with_snapshots(&[(first, false), (second, true)], Duration::from_millis(30));
        assert_eq!((ios(&fin, 0), ios(&fin, 1)), (100, 100));
        assert!(!snaps.is_empty());
        for s in &snaps {
            assert_eq!(s.jobs.len(), 2);
            // The second job starts once the first has finished.
            if ios(s, 1) > 0 {
                assert_eq!(ios(s, 0), 100);
            }
        }
        // While the first group runs, the second has done nothing.
        assert!(snaps.iter().any(|s| ios(s, 1) == 0));
    }
}

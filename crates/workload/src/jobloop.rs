//! One job's loop on one thread: generate, queue, submit, reap, record.
//!
//! Timing: the loop reads the monotonic clock once per turn, right after
//! the kernel returns. That one reading stamps every completion reaped in
//! the turn and every I/O queued in it (they are submitted by the next
//! `io_uring_enter`, immediately after). So latency is measured from just
//! before the submitting system call to just after the reaping one: the
//! same span fio calls `lat`, at one clock read per turn instead of two per
//! I/O. With `rate_iops`, each I/O also has an intended issue time
//! (t0 + n / rate) and its latency from that time is recorded separately,
//! so a device that falls behind shows it (no coordinated omission).

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use std::time::Instant;

use drivelab_stats::{LatencyHistogram, Series, TimeSeries, Welford};

use crate::gen::{GenConfig, Generator, IoDesc, Op};
use crate::logs::JobLogs;
use crate::samples::JobSamples;
use drivelab_engine::engine::Engine;
use drivelab_engine::ioloop::{self, After, Done, Driver, LoopConfig, Next};

pub use drivelab_engine::clock::now_ns;

/// How a job runs.
#[derive(Debug, Clone)]
pub struct JobConfig {
    /// What to issue.
    pub gen: GenConfig,
    /// Stop this long after measuring starts (None: run until `io_limit`).
    pub runtime: Option<Duration>,
    /// Stop after issuing this many bytes (None: until `runtime`).
    pub io_limit: Option<u64>,
    /// Run this long before measuring.
    pub ramp: Duration,
    /// Cap in I/O per second.
    pub rate_iops: Option<u64>,
    /// Issue an fsync after every N writes (0 = never).
    pub fsync_every: u32,
    /// Interval of the per-interval series.
    pub log_interval: Duration,
    /// Number of targets (for per-target byte counts).
    pub targets: usize,
    /// Per-direction caps (`rate`, `rate_iops=R,W`, `rate_process`).
    pub pace: crate::rate::RateConfig,
    /// Content of written blocks (`verify`); None: buffers filled once.
    pub verify: Option<crate::verify::Content>,
    /// Check each read against `verify` (`do_verify` on a reading job).
    pub check_reads: bool,
    /// fio's log files and the window of the rate samples.
    pub logs: crate::logs::LogSpec,
    /// The job's name and number in the run (from 1), naming its log files.
    pub log_name: (String, usize),
    /// Set when a job of the group with `exitall` has finished: this job
    /// then ends too, as finished (None: no job of the group has exitall).
    pub group_end: Option<std::sync::Arc<AtomicBool>>,
    /// Stop after issuing this many I/Os (`number_ios` times `loops`);
    /// None: no count limit.
    pub io_count_limit: Option<u64>,
    /// fio's think time: after `blocks` I/Os, wait for them to complete,
    /// then issue nothing for `ns`.
    pub think: Option<Think>,
    /// Where the job publishes its per-direction counts for a progress
    /// display (None: nobody watches).
    pub live: Option<std::sync::Arc<LiveCounters>>,
    /// Error policy, verify backlog and dumps, dedupe buffers.
    pub extras: crate::errors::LoopExtras,
}

/// fio's `thinktime`: a pause in issuing after every `blocks` reads,
/// writes or trims, once they have completed. As fio's documentation puts
/// it, this caps the queue depth at `blocks`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Think {
    /// Length of the pause, ns (`thinktime`).
    pub ns: u64,
    /// The last part of the pause spent spinning on the clock, ns
    /// (`thinktime_spin`).
    pub spin_ns: u64,
    /// I/Os between pauses (`thinktime_blocks`), at least 1.
    pub blocks: u32,
}

/// A running job's counts per direction (read, write, trim) since
/// measuring started, stored where the loop already publishes its I/O count
/// (once per turn, relaxed): no clock read or lock is added to the loop. A
/// side thread reads them for the progress line.
#[derive(Debug, Default)]
pub struct LiveCounters {
    /// Completed I/Os per direction.
    pub ios: [AtomicU64; 3],
    /// Bytes moved per direction.
    pub bytes: [AtomicU64; 3],
}

/// Per-direction statistics of one job.
#[derive(Debug, Clone)]
pub struct DirStats {
    /// Completed I/Os.
    pub ios: u64,
    /// Bytes moved.
    pub bytes: u64,
    /// Latency histogram, ns (submission to completion).
    pub lat: LatencyHistogram,
    /// Running moments of the latency, ns.
    pub moments: Welford,
    /// Latency from the intended issue time, ns (rate-limited runs only).
    pub lat_intended: Option<LatencyHistogram>,
    /// Running moments of the latency from the intended issue time, ns
    /// (empty unless rate-limited).
    pub intended_moments: Welford,
}

impl DirStats {
    pub(crate) fn new(rated: bool) -> DirStats {
        DirStats {
            ios: 0,
            bytes: 0,
            lat: LatencyHistogram::new(),
            moments: Welford::new(),
            lat_intended: rated.then(LatencyHistogram::new),
            intended_moments: Welford::new(),
        }
    }

    /// Add another job's statistics (per-job stats merge by addition).
    pub fn merge(&mut self, o: &DirStats) {
        self.ios += o.ios;
        self.bytes += o.bytes;
        self.lat.merge(&o.lat);
        self.moments.merge(&o.moments);
        self.intended_moments.merge(&o.intended_moments);
        match (&mut self.lat_intended, &o.lat_intended) {
            (Some(a), Some(b)) => a.merge(b),
            (None, Some(b)) => self.lat_intended = Some(b.clone()),
            _ => {}
        }
    }
}

/// Failed I/Os kept per job.
pub const MAX_ERRORS: usize = 16;

/// An I/O error a job met.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IoFailure {
    /// The operation.
    pub op: Op,
    /// Target index.
    pub target: u32,
    /// Byte offset.
    pub offset: u64,
    /// Length in bytes.
    pub len: u32,
    /// errno.
    pub errno: i32,
    /// The job went past it (`continue_on_error`).
    pub passed: bool,
    /// A failed read narrowed down after the job ended: the blocks that
    /// still cannot be read, as inclusive (first, last) LBA ranges. None
    /// when not narrowed (see `exec::narrow_failed_read`).
    pub unreadable: Option<Vec<(u64, u64)>>,
}

/// What a job did.
#[derive(Debug, Clone)]
pub struct JobOutcome {
    /// Statistics per direction: read, write, trim, sync ([`Op::index`]).
    pub dirs: [DirStats; 4],
    /// Measured time (after ramp), ns.
    pub runtime_ns: u64,
    /// Bytes and I/Os per target per direction (read, write, trim).
    pub per_target: Vec<[(u64, u64); 3]>,
    /// Per-interval series.
    pub series: Series,
    /// The failed I/Os, in completion order: the job stops at the first,
    /// as fio does by default, and the I/Os in flight with it complete,
    /// so more than one may fail (at most [`MAX_ERRORS`] are kept).
    pub errors: Vec<IoFailure>,
    /// I/Os that moved fewer bytes than asked.
    pub short_ios: u64,
    /// Stopped early by the stop flag (Ctrl-C).
    pub interrupted: bool,
    /// User and system CPU time of the job's thread, ns.
    pub cpu_user_ns: u64,
    /// System CPU time, ns.
    pub cpu_sys_ns: u64,
    /// Voluntary plus involuntary context switches.
    pub ctx_switches: u64,
    /// The first failed verify check (or the run's failure), in words; the
    /// job stops at it.
    pub verify_failure: Option<String>,
    /// fio's rate samples, latency ranges, depth distributions, page faults.
    pub samples: crate::samples::JobSamples,
    /// Errors met, passed or not (fio's `total_err`, `first_error`).
    pub err_count: crate::errors::ErrorCount,
    /// Under `verify_backlog`: the writes not checked during the job.
    pub verify_left: Option<Vec<IoDesc>>,
    /// Writes that failed and were gone past, under `verify`: not checked.
    pub failed_writes: Vec<IoDesc>,
    /// Ended by `verify_fatal` at a verify error it went past: no read-back
    /// pass follows.
    pub verify_stopped: bool,
}

fn thread_rusage() -> (u64, u64, u64) {
    let u = drivelab_engine::sys::thread_usage();
    (u.user_ns, u.system_ns, u.context_switches)
}

/// Errors that end a job before it starts or while it runs.
#[derive(Debug, thiserror::Error)]
pub enum JobError {
    /// The generator rejected the configuration.
    #[error(transparent)]
    Gen(#[from] crate::gen::GenError),
    /// A setting the job cannot run with.
    #[error("invalid job setting: {0}")]
    Config(String),
    /// The engine's submit/wait call failed.
    #[error("the I/O engine failed: {0}")]
    Engine(#[from] std::io::Error),
}

/// The job as a driver of the I/O loop: the generator says what comes
/// next, completions go into the statistics, the ramp and the runtime are
/// watched once per turn.
struct JobDriver<'a, const FILL: bool> {
    cfg: &'a JobConfig,
    pacer: Option<crate::rate::Pacer>,
    pending: Option<IoDesc>,
    verify_failure: Option<String>,
    gen: Generator,
    rated: bool,
    dirs: [DirStats; 4],
    per_target: Vec<[(u64, u64); 3]>,
    interval_ns: u64,
    series: TimeSeries,
    ramp_end: u64,
    measuring: bool,
    meas_start: u64,
    deadline: Option<u64>,
    issued_bytes: u64,
    issued_ios: u64,
    /// Reads, writes and trims issued since the last think time.
    think_issued: u32,
    /// The current think time ends at this monotonic time, ns.
    think_until: Option<u64>,
    writes_since_sync: u32,
    last_write_target: u32,
    errors: Vec<IoFailure>,
    short_ios: u64,
    progress: &'a AtomicU64,
    config_error: Option<String>,
    samples: JobSamples,
    logs: Option<JobLogs>,
    /// An error the policy does not pass: the job stops.
    fatal: bool,
    err_count: crate::errors::ErrorCount,
    filler: Option<crate::dedupe::BufFiller>,
    backlog: Option<crate::verify::Backlog>,
    last_read: bool,
    failed_writes: Vec<IoDesc>,
    verify_stopped: bool,
}

impl<const FILL: bool> JobDriver<'_, FILL> {
    fn sync_due(&self) -> bool {
        self.cfg.fsync_every > 0 && self.writes_since_sync >= self.cfg.fsync_every
    }

    fn budget_spent(&self) -> bool {
        self.cfg.io_limit.is_some_and(|l| self.issued_bytes >= l)
            || self
                .cfg
                .io_count_limit
                .is_some_and(|n| self.issued_ios >= n)
    }

    /// Under `thinktime`: `Some(next)` while the job thinks (waiting for
    /// its in-flight I/Os, then for the end of the pause), None to issue.
    #[inline]
    fn thinking(&mut self, now: u64, inflight: u32) -> Option<Next> {
        let t = self.cfg.think?;
        if let Some(end) = self.think_until {
            if now < end {
                return Some(Next::At(end));
            }
            self.think_until = None;
            return None;
        }
        if self.think_issued < t.blocks {
            return None;
        }
        if inflight > 0 {
            // fio quiesces first: the pause starts when the queue is empty.
            return Some(Next::Idle);
        }
        self.think_issued = 0;
        // Never past the job's runtime (fio cuts the pause at its end too).
        let end = (now + t.ns).min(self.deadline.unwrap_or(u64::MAX));
        self.think_until = Some(end);
        Some(Next::At(end))
    }
}

impl<const FILL: bool> JobDriver<'_, FILL> {
    /// What to issue next (see [`Driver::next`]).
    #[inline]
    fn next_io(&mut self, now: u64, inflight: u32, buf: &mut [u8]) -> Next {
        if self.fatal || self.verify_failure.is_some() {
            return Next::Done;
        }
        if self.cfg.think.is_some() {
            if let Some(n) = self.thinking(now, inflight) {
                return n;
            }
        }
        if let Some(b) = self.backlog.as_mut() {
            if let Some(io) = b.next(self.last_read) {
                return Next::Io {
                    io,
                    due: None,
                    tag: crate::verify::VERIFY_TAG,
                };
            }
        }
        let Some(mut p) = self.pacer.take() else {
            return self.unpaced(buf);
        };
        let io = match self.pending.take() {
            Some(io) => Some(io),
            None if self.sync_due() || self.budget_spent() => None,
            None => Some(self.gen.next_io()),
        };
        let next = match io {
            None => self.unpaced(buf),
            Some(io) => {
                let due = p.slot(io.op, now);
                match due.filter(|&at| at > now) {
                    Some(at) => {
                        self.pending = Some(io);
                        Next::At(at)
                    }
                    None => {
                        p.advance(io.op, io.len);
                        self.issue(io, due, buf)
                    }
                }
            }
        };
        self.pacer = Some(p);
        next
    }

    /// The next I/O when nothing is paced (or a sync, or the end).
    #[inline]
    fn unpaced(&mut self, buf: &mut [u8]) -> Next {
        if self.sync_due() {
            self.writes_since_sync = 0;
            let io = IoDesc {
                target: self.last_write_target,
                op: Op::Fsync,
                offset: 0,
                len: 0,
            };
            return Next::Io {
                io,
                due: None,
                tag: 0,
            };
        }
        if self.budget_spent() {
            return Next::Done;
        }
        let io = self.gen.next_io();
        self.issue(io, None, buf)
    }

    /// Account a generated I/O as issued (and fill its buffer under verify).
    #[inline]
    fn issue(&mut self, io: IoDesc, due: Option<u64>, buf: &mut [u8]) -> Next {
        if io.op == Op::Write {
            self.writes_since_sync += 1;
            self.last_write_target = io.target;
            if FILL {
                if let Some(c) = &self.cfg.verify {
                    c.fill(&mut buf[..io.len as usize], io.offset);
                } else if let Some(f) = self.filler.as_mut() {
                    f.fill(&mut buf[..io.len as usize]);
                }
            }
        }
        let tag = match self.backlog.as_mut() {
            Some(b) if io.op == Op::Write => b.written(io),
            _ => 0,
        };
        self.issued_bytes += u64::from(io.len);
        self.issued_ios += 1;
        self.think_issued = self.think_issued.saturating_add(1);
        Next::Io { io, due, tag }
    }
}

impl<const FILL: bool> Driver for JobDriver<'_, FILL> {
    // Without verify, buffers were filled once (random data, as fio's) and
    // are never looked at; with it, each write is filled by its offset.
    const BUFFERS: bool = FILL;

    #[inline]
    fn next(&mut self, now: u64, inflight: u32, buf: &mut [u8]) -> Next {
        let next = self.next_io(now, inflight, buf);
        if self.measuring && matches!(next, Next::Io { .. }) {
            self.samples.depth.queued(inflight + 1);
        }
        next
    }

    fn inspects(&self, io: &IoDesc, tag: u64) -> bool {
        FILL && io.op == Op::Read && (self.cfg.check_reads || tag == crate::verify::VERIFY_TAG)
    }

    #[inline]
    fn complete(&mut self, d: &Done, buf: &[u8]) -> After {
        let io = d.io;
        if io.op == Op::Write && d.tag != crate::verify::VERIFY_TAG {
            if let Some(b) = self.backlog.as_mut() {
                b.completed(d.tag, d.result >= 0);
            }
        }
        self.last_read = io.op == Op::Read;
        if d.result < 0 {
            let errno = -d.result;
            let policy = &self.cfg.extras.policy;
            let passed = policy.passes(io.op, errno);
            // As fio counts: every error passed, and the one that ends the
            // job when its kind may be continued past at all (the I/Os
            // still in flight then fail uncounted).
            if passed || (!self.fatal && policy.continues_kind(io.op, errno)) {
                self.err_count.add(errno);
            }
            self.fatal |= !passed;
            if io.op != Op::Fsync {
                self.err_count.failed_ios[io.op.index()] += 1;
            }
            if passed && io.op == Op::Write && FILL && self.cfg.verify.is_some() {
                // Never checked afterwards: fio drops a failed write from
                // what it verifies.
                self.failed_writes.push(io);
            }
            self.cfg.extras.report_io_error(&io, errno, passed);
            if self.errors.len() < MAX_ERRORS {
                self.errors.push(IoFailure {
                    op: io.op,
                    target: io.target,
                    offset: io.offset,
                    len: io.len,
                    errno,
                    passed,
                    unreadable: None,
                });
            }
            return After::Release;
        }
        let bytes = d.result as u64;
        if io.op != Op::Fsync && bytes < u64::from(io.len) {
            self.short_ios += 1;
        }
        if FILL
            && io.op == Op::Read
            && (self.cfg.check_reads || d.tag == crate::verify::VERIFY_TAG)
            && self.verify_failure.is_none()
        {
            if let Some(c) = &self.cfg.verify {
                let got = &buf[..(bytes as usize).min(buf.len())];
                if let Err(m) = c.check(got, io.offset) {
                    let name = self.cfg.extras.target_name(io.target);
                    match crate::verify::verify_failed(
                        &self.cfg.extras,
                        &mut self.err_count,
                        c,
                        got,
                        io.offset,
                        &name,
                        &m,
                    ) {
                        crate::verify::Verdict::Pass => {}
                        // Ends the job, not as a failure.
                        crate::verify::Verdict::Stop => {
                            self.fatal = true;
                            self.verify_stopped = true;
                        }
                        crate::verify::Verdict::Fail => self.verify_failure = Some(m),
                    }
                }
            }
        }
        if self.measuring {
            let lat = d.latency();
            let dir = &mut self.dirs[io.op.index()];
            dir.ios += 1;
            dir.bytes += bytes;
            dir.lat.record(lat);
            dir.moments.record(lat as f64);
            if let Some(h) = dir.lat_intended.as_mut() {
                let v = d.now.saturating_sub(d.intended);
                h.record(v);
                dir.intended_moments.record(v as f64);
            }
            self.samples.depth.reaped();
            if io.op != Op::Fsync {
                let pt = &mut self.per_target[io.target as usize][io.op.index()];
                pt.0 += 1;
                pt.1 += bytes;
                let t = d.now.saturating_sub(self.meas_start);
                self.series.record(t, lat, bytes);
                let s = &mut self.samples;
                while s.rates.due(t) {
                    s.rates.close();
                }
                s.rates.add(io.op.index(), bytes);
                s.lat.record(lat);
                if let Some(l) = self.logs.as_mut() {
                    l.io(t, io.op.index(), bytes, lat, io.offset);
                }
            }
        }
        After::Release
    }

    fn turn(&mut self, now: u64) -> bool {
        if self.measuring {
            self.samples.depth.turn();
        }
        if let Some(l) = self.logs.as_mut() {
            l.between_turns();
        }
        let d = &self.dirs;
        self.progress
            .store(d[0].ios + d[1].ios + d[2].ios, Ordering::Relaxed);
        if let Some(l) = &self.cfg.live {
            for (k, d) in d.iter().enumerate().take(3) {
                l.ios[k].store(d.ios, Ordering::Relaxed);
                l.bytes[k].store(d.bytes, Ordering::Relaxed);
            }
        }
        if !self.measuring && now >= self.ramp_end {
            self.measuring = true;
            self.meas_start = now;
            self.deadline = self.cfg.runtime.map(|r| now + r.as_nanos() as u64);
            // fio counts number_ios from the end of the ramp.
            self.issued_ios = 0;
            for d in self.dirs.iter_mut() {
                *d = DirStats::new(self.rated);
            }
            for pt in self.per_target.iter_mut() {
                *pt = [(0, 0); 3];
            }
            self.samples = JobSamples::new(self.samples.rates.window_ms());
            match TimeSeries::new(self.interval_ns, Instant::now()) {
                Ok(s) => self.series = s,
                Err(e) => {
                    self.config_error = Some(e.to_string());
                    return true;
                }
            }
        }
        let time_up = self.deadline.is_some_and(|d| now >= d);
        let budget_done = self.budget_spent() && !self.sync_due() && self.pending.is_none();
        let group_ended = self
            .cfg
            .group_end
            .as_ref()
            .is_some_and(|f| f.load(Ordering::Relaxed));
        time_up || budget_done || group_ended || self.fatal || self.verify_failure.is_some()
    }
}

/// Run one job to completion on the current thread. `t0` is the common
/// start time of all jobs (from [`now_ns`]); `stop` ends the job early.
pub fn run_job<E: Engine>(
    engine: &mut E,
    cfg: &JobConfig,
    t0: u64,
    stop: &AtomicBool,
    progress: &AtomicU64,
) -> Result<JobOutcome, JobError> {
    if cfg.verify.is_some() || cfg.extras.dedupe.is_some() {
        run_with::<E, true>(engine, cfg, t0, stop, progress)
    } else {
        run_with::<E, false>(engine, cfg, t0, stop, progress)
    }
}

fn run_with<E: Engine, const FILL: bool>(
    engine: &mut E,
    cfg: &JobConfig,
    t0: u64,
    stop: &AtomicBool,
    progress: &AtomicU64,
) -> Result<JobOutcome, JobError> {
    let gen = Generator::new(&cfg.gen)?;
    let pacer = crate::rate::Pacer::new(cfg.pace, cfg.gen.seed);
    let rated = cfg.rate_iops.is_some() || pacer.is_some();
    let interval_ns = cfg.log_interval.as_nanos().max(1) as u64;
    let series = TimeSeries::new(interval_ns, Instant::now())
        .map_err(|e| JobError::Config(e.to_string()))?;
    let ramp_end = t0 + cfg.ramp.as_nanos() as u64;
    let mut drv = JobDriver::<FILL> {
        cfg,
        pacer,
        pending: None,
        verify_failure: None,
        gen,
        rated,
        dirs: std::array::from_fn(|_| DirStats::new(rated)),
        per_target: vec![[(0u64, 0u64); 3]; cfg.targets.max(1)],
        interval_ns,
        series,
        ramp_end,
        measuring: cfg.ramp.is_zero(),
        meas_start: t0,
        deadline: cfg.runtime.map(|r| ramp_end + r.as_nanos() as u64),
        issued_bytes: 0,
        issued_ios: 0,
        think_issued: 0,
        think_until: None,
        writes_since_sync: 0,
        last_write_target: 0,
        errors: Vec::new(),
        short_ios: 0,
        progress,
        config_error: None,
        samples: JobSamples::new(cfg.logs.sample_window_ms()),
        logs: JobLogs::create(&cfg.logs, &cfg.log_name.0, cfg.log_name.1)
            .map_err(JobError::Config)?,
        fatal: false,
        err_count: crate::errors::ErrorCount::default(),
        filler: cfg
            .extras
            .dedupe
            .as_ref()
            .map(crate::dedupe::BufFiller::new),
        backlog: (cfg.verify.is_some() && cfg.extras.verify.backlog > 0).then(|| {
            crate::verify::Backlog::new(cfg.extras.verify.backlog, cfg.extras.verify.batch())
        }),
        last_read: false,
        failed_writes: Vec::new(),
        verify_stopped: false,
    };
    let (minf0, majf0) = crate::samples::thread_faults();
    let (u0, s0, c0) = thread_rusage();
    let lc = LoopConfig {
        stop: Some(stop),
        rate_interval_ns: cfg.rate_iops.map(|r| 1_000_000_000 / r.max(1)),
        spin_ns: cfg.think.map_or(0, |t| t.spin_ns),
        ..LoopConfig::default()
    };
    let st = ioloop::run(engine, &mut drv, &lc)?;
    if let Some(e) = drv.config_error {
        return Err(JobError::Config(e));
    }
    let runtime_ns = st.ended.saturating_sub(drv.meas_start);
    let series = drv.series.finish(runtime_ns);
    let (u1, s1, c1) = thread_rusage();
    let (minf1, majf1) = crate::samples::thread_faults();
    let mut samples = drv.samples;
    samples.minf = minf1.saturating_sub(minf0);
    samples.majf = majf1.saturating_sub(majf0);
    samples.elapsed_ns = st.ended.saturating_sub(t0);
    if let Some(l) = drv.logs {
        l.finish(runtime_ns).map_err(JobError::Config)?;
    }
    Ok(JobOutcome {
        dirs: drv.dirs,
        runtime_ns,
        per_target: drv.per_target,
        series,
        errors: drv.errors,
        short_ios: drv.short_ios,
        interrupted: st.interrupted,
        cpu_user_ns: u1.saturating_sub(u0),
        cpu_sys_ns: s1.saturating_sub(s0),
        ctx_switches: c1.saturating_sub(c0),
        verify_failure: drv.verify_failure,
        samples,
        err_count: drv.err_count,
        verify_left: drv.backlog.map(crate::verify::Backlog::into_left),
        failed_writes: drv.failed_writes,
        verify_stopped: drv.verify_stopped,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use drivelab_engine::buf::Fill;
    use drivelab_engine::engine::Null;

    /// Run a null-engine job set by `opts` (fio names) and return its outcome.
    fn run_null(opts: &[(&str, &str)]) -> JobOutcome {
        let mut spec = crate::JobSpec::default();
        spec.set("filename", Some("null-target")).unwrap();
        spec.set("ioengine", Some("null")).unwrap();
        for (k, v) in opts {
            spec.set(k, Some(v)).unwrap();
        }
        let plan = crate::plan(&[(spec, false)], &crate::PlanOptions::default()).unwrap();
        let job = &plan.jobs[0];
        let cfg = crate::exec::job_config(job, 1);
        let mut e = Null::new(job.spec.iodepth, job.spec.max_bs() as usize, Fill::Zeroed).unwrap();
        let stop = AtomicBool::new(false);
        let progress = AtomicU64::new(0);
        run_job(&mut e, &cfg, now_ns(), &stop, &progress).unwrap()
    }

    fn ios(o: &JobOutcome) -> u64 {
        o.dirs[..3].iter().map(|d| d.ios).sum()
    }

    #[test]
    fn number_ios_stops_the_job_before_its_size() {
        let o = run_null(&[
            ("size", "1m"),
            ("rw", "randrw"),
            ("iodepth", "8"),
            ("number_ios", "37"),
        ]);
        assert_eq!(ios(&o), 37);
        assert_eq!(o.dirs[0].bytes + o.dirs[1].bytes, 37 * 4096);
        // With loops, fio counts number_ios once per loop.
        let o = run_null(&[("size", "1m"), ("loops", "3"), ("number_ios", "10")]);
        assert_eq!(ios(&o), 30);
        // It never extends the job: size still ends it first.
        let o = run_null(&[("size", "64k"), ("number_ios", "1000")]);
        assert_eq!(ios(&o), 16);
    }

    #[test]
    fn thinktime_pauses_between_blocks_of_ios() {
        // 20 I/Os in blocks of 4 with a 2 ms pause after each block (the
        // last pause may be cut by the end): at least 4 pauses, 8 ms.
        let o = run_null(&[
            ("size", "80k"),
            ("iodepth", "4"),
            ("thinktime", "2ms"),
            ("thinktime_blocks", "4"),
        ]);
        assert_eq!(ios(&o), 20);
        assert!(o.runtime_ns >= 8_000_000, "{}", o.runtime_ns);
        // Bare values are microseconds; a spun part still pauses as long.
        let o = run_null(&[
            ("size", "16k"),
            ("thinktime", "1500"),
            ("thinktime_spin", "500"),
        ]);
        assert_eq!(ios(&o), 4);
        assert!(o.runtime_ns >= 3 * 1_500_000, "{}", o.runtime_ns);
    }

    #[test]
    fn thinktime_blocks_caps_the_depth() {
        // Depth 8 but a pause after every 2 I/Os: 2 in flight at most.
        let o = run_null(&[
            ("size", "64k"),
            ("iodepth", "8"),
            ("thinktime", "100"),
            ("thinktime_blocks", "2"),
        ]);
        assert_eq!(ios(&o), 16);
        // I/Os by the depth they were queued at: 1, 2-3, 4-7, …
        let level = o.samples.depth.level;
        assert!(level[1] > 0, "{level:?}");
        assert_eq!(level[2..].iter().sum::<u64>(), 0, "{level:?}");
    }

    #[test]
    fn thinktime_never_runs_past_the_runtime() {
        let o = run_null(&[("size", "1m"), ("thinktime", "10s"), ("runtime", "50ms")]);
        assert_eq!(ios(&o), 1);
        assert!(o.runtime_ns < 5_000_000_000, "{}", o.runtime_ns);
    }

    #[test]
    fn bad_think_values_name_the_key() {
        let mut j = crate::JobSpec::default();
        let e = j.set("thinktime", Some("soon")).unwrap_err().to_string();
        assert!(e.contains("thinktime"), "{e}");
        let e = j
            .set("thinktime_blocks", Some("0"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("thinktime_blocks"), "{e}");
        let e = j.set("number_ios", Some("-3")).unwrap_err().to_string();
        assert!(e.contains("number_ios"), "{e}");
        j.set("filename", Some("x")).unwrap();
        j.set("thinktime", Some("100")).unwrap();
        assert_eq!(j.thinktime, Duration::from_micros(100));
        j.set("thinktime_spin", Some("1ms")).unwrap();
        let e = j.validate().unwrap_err().to_string();
        assert!(e.contains("thinktime_spin"), "{e}");
    }
}

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

use crate::engine::{Completion, Engine};
use crate::gen::{GenConfig, Generator, IoDesc, Op};

/// Monotonic time in nanoseconds (CLOCK_MONOTONIC, via the vDSO).
#[inline]
pub fn now_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes one timespec to a valid pointer.
    unsafe {
        libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts);
    }
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

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
    fn new(rated: bool) -> DirStats {
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

/// The first I/O error a job met.
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
    /// The first error, if any (the job stops at it, as fio does by default).
    pub error: Option<IoFailure>,
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
}

#[derive(Debug, Clone, Copy)]
struct SlotInfo {
    submit: u64,
    intended: u64,
    op: Op,
    target: u32,
    offset: u64,
    len: u32,
}

fn thread_rusage() -> (u64, u64, u64) {
    // SAFETY: getrusage fills a zeroed rusage struct we own.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: RUSAGE_THREAD with a valid pointer.
    unsafe {
        libc::getrusage(libc::RUSAGE_THREAD, &mut ru);
    }
    let tv = |t: libc::timeval| t.tv_sec as u64 * 1_000_000_000 + t.tv_usec as u64 * 1000;
    (
        tv(ru.ru_utime),
        tv(ru.ru_stime),
        (ru.ru_nvcsw + ru.ru_nivcsw) as u64,
    )
}

/// Sleep until the monotonic clock reaches `deadline_ns` (absolute).
fn sleep_until(deadline_ns: u64) {
    let ts = libc::timespec {
        tv_sec: (deadline_ns / 1_000_000_000) as libc::time_t,
        tv_nsec: (deadline_ns % 1_000_000_000) as libc::c_long,
    };
    // SAFETY: an absolute sleep on CLOCK_MONOTONIC with a valid timespec;
    // EINTR just returns early and the caller re-checks the time.
    unsafe {
        libc::clock_nanosleep(
            libc::CLOCK_MONOTONIC,
            libc::TIMER_ABSTIME,
            &ts,
            std::ptr::null_mut(),
        );
    }
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

/// Run one job to completion on the current thread. `t0` is the common
/// start time of all jobs (from [`now_ns`]); `stop` ends the job early.
pub fn run_job<E: Engine>(
    engine: &mut E,
    cfg: &JobConfig,
    t0: u64,
    stop: &AtomicBool,
    progress: &AtomicU64,
) -> Result<JobOutcome, JobError> {
    let mut gen = Generator::new(&cfg.gen)?;
    let depth = engine.depth();
    let rated = cfg.rate_iops.is_some();
    let mut dirs = [
        DirStats::new(rated),
        DirStats::new(rated),
        DirStats::new(rated),
        DirStats::new(rated),
    ];
    let mut per_target = vec![[(0u64, 0u64); 3]; cfg.targets.max(1)];
    let interval_ns = cfg.log_interval.as_nanos().max(1) as u64;
    let mut series = TimeSeries::new(interval_ns, Instant::now())
        .map_err(|e| JobError::Config(e.to_string()))?;
    let blank = SlotInfo {
        submit: 0,
        intended: 0,
        op: Op::Read,
        target: 0,
        offset: 0,
        len: 0,
    };
    let mut slots = vec![blank; depth as usize];
    let mut free: Vec<u32> = (0..depth).rev().collect();
    let mut inflight: u32 = 0;
    let ramp_end = t0 + cfg.ramp.as_nanos() as u64;
    let mut measuring = cfg.ramp.is_zero();
    let mut meas_start = t0;
    let mut deadline = cfg.runtime.map(|r| ramp_end + r.as_nanos() as u64);
    let mut issued_bytes: u64 = 0;
    let mut writes_since_sync: u32 = 0;
    let mut last_write_target: u32 = 0;
    let rate_interval = cfg.rate_iops.map(|r| 1_000_000_000 / r.max(1));
    let mut next_intended = t0;
    let mut error: Option<IoFailure> = None;
    let mut short_ios = 0u64;
    let mut interrupted = false;
    let (u0, s0, c0) = thread_rusage();
    let mut now;
    loop {
        now = now_ns();
        // Reap everything that finished.
        let meas = measuring;
        let ms = meas_start;
        engine.reap(|c: Completion| {
            let s = slots[c.slot as usize];
            inflight -= 1;
            free.push(c.slot);
            if c.result < 0 {
                if error.is_none() {
                    error = Some(IoFailure {
                        op: s.op,
                        target: s.target,
                        offset: s.offset,
                        len: s.len,
                        errno: -c.result,
                    });
                }
                return;
            }
            let bytes = c.result as u64;
            if s.op != Op::Fsync && bytes < u64::from(s.len) {
                short_ios += 1;
            }
            if meas {
                let lat = now.saturating_sub(s.submit);
                let d = &mut dirs[s.op.index()];
                d.ios += 1;
                d.bytes += bytes;
                d.lat.record(lat);
                d.moments.record(lat as f64);
                if let Some(h) = d.lat_intended.as_mut() {
                    let v = now.saturating_sub(s.intended);
                    h.record(v);
                    d.intended_moments.record(v as f64);
                }
                if s.op != Op::Fsync {
                    let pt = &mut per_target[s.target as usize][s.op.index()];
                    pt.0 += 1;
                    pt.1 += bytes;
                    series.record(now.saturating_sub(ms), lat, bytes);
                }
            }
        });
        progress.store(dirs[0].ios + dirs[1].ios + dirs[2].ios, Ordering::Relaxed);
        if !measuring && now >= ramp_end {
            measuring = true;
            meas_start = now;
            deadline = cfg.runtime.map(|r| now + r.as_nanos() as u64);
            for d in dirs.iter_mut() {
                *d = DirStats::new(rated);
            }
            for pt in per_target.iter_mut() {
                *pt = [(0, 0); 3];
            }
            series = TimeSeries::new(interval_ns, Instant::now())
                .map_err(|e| JobError::Config(e.to_string()))?;
        }
        if stop.load(Ordering::Relaxed) {
            interrupted = true;
        }
        let time_up = deadline.is_some_and(|d| now >= d);
        let sync_pending = cfg.fsync_every > 0 && writes_since_sync >= cfg.fsync_every;
        let budget_done = cfg.io_limit.is_some_and(|l| issued_bytes >= l) && !sync_pending;
        let stopping = interrupted || time_up || budget_done || error.is_some();
        let mut wake_at: Option<u64> = None;
        if !stopping {
            while let Some(slot) = free.pop() {
                let sync_due = cfg.fsync_every > 0 && writes_since_sync >= cfg.fsync_every;
                if !sync_due && cfg.io_limit.is_some_and(|l| issued_bytes >= l) {
                    free.push(slot);
                    break;
                }
                let mut intended = now;
                if let Some(iv) = rate_interval {
                    if next_intended > now {
                        free.push(slot);
                        wake_at = Some(next_intended);
                        break;
                    }
                    intended = next_intended;
                    next_intended += iv;
                }
                let io = if sync_due {
                    writes_since_sync = 0;
                    IoDesc {
                        target: last_write_target,
                        op: Op::Fsync,
                        offset: 0,
                        len: 0,
                    }
                } else {
                    let io = gen.next_io();
                    if io.op == Op::Write {
                        writes_since_sync += 1;
                        last_write_target = io.target;
                    }
                    issued_bytes += u64::from(io.len);
                    io
                };
                slots[slot as usize] = SlotInfo {
                    submit: now,
                    intended,
                    op: io.op,
                    target: io.target,
                    offset: io.offset,
                    len: io.len,
                };
                engine.queue(slot, &io);
                inflight += 1;
            }
        }
        if inflight == 0 {
            if stopping || wake_at.is_none() {
                break;
            }
            if let Some(w) = wake_at {
                sleep_until(w);
            }
            continue;
        }
        let timeout = wake_at.map(|w| Duration::from_nanos(w.saturating_sub(now)));
        engine.commit(1, timeout)?;
    }
    let end = now_ns();
    let runtime_ns = end.saturating_sub(meas_start);
    let series = series.finish(runtime_ns);
    let (u1, s1, c1) = thread_rusage();
    Ok(JobOutcome {
        dirs,
        runtime_ns,
        per_target,
        series,
        error,
        short_ios,
        interrupted,
        cpu_user_ns: u1.saturating_sub(u0),
        cpu_sys_ns: s1.saturating_sub(s0),
        ctx_switches: c1.saturating_sub(c0),
    })
}

//! How one job starts and runs on the engine its front opened: the start
//! gate every job of a group waits at, the job's targets opened from its
//! claims, and the run itself with what fio does after it (read back).
//! Each engine front ([`crate::engines::front`]) calls
//! [`JobRun::start_and_run`] once with the engine it built.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Condvar, Mutex};
use std::time::{Duration, Instant};

use drivelab_device::claim::Claim;
use drivelab_engine::engine::Target;

use crate::engines::files::RunSets;
use crate::job::io_loop::{now_ns, run_job, JobConfig};
use crate::job::outcome::{JobError, JobOutcome};
use crate::plan::model::{Plan, PlannedJob};
use crate::run::error::RunError;

pub(crate) fn open_targets(
    plan: &Plan,
    claims: &[Option<Claim>],
    job: &PlannedJob,
) -> Result<Vec<Target>, RunError> {
    let mut out = Vec::with_capacity(job.targets.len());
    for (k, &i) in job.targets.iter().enumerate() {
        let t = &plan.targets[i];
        let opened = match (&claims[i], job.writes) {
            (Some(c), true) => Target::claimed(c, job.direct),
            _ => Target::read_only(&t.path, job.direct),
        };
        let target = opened.map_err(|e| {
            let hint = if job.direct && e.raw_os_error() == Some(libc::EINVAL) {
                "; this filesystem does not support direct I/O: use --direct=0".to_string()
            } else {
                String::new()
            };
            RunError::Open {
                path: t.path.display().to_string(),
                source: e,
                hint,
            }
        })?;
        // fio's invalidate and pre_read: on the job's region of the file.
        let (off, len) = job
            .regions
            .get(k)
            .map_or((0, 0), |r| (r.start, r.end - r.start));
        let prepared = if job.spec.syncs.drops_cache() {
            target.drop_cache(off, len)
        } else if job.spec.syncs.pre_read && !job.direct {
            target.read_through(off, len).map(|_| ())
        } else {
            Ok(())
        };
        prepared.map_err(|source| RunError::Prepare {
            path: t.path.display().to_string(),
            source,
        })?;
        // fio's write_hint: a refused hint fails the job, as in fio.
        if let Some(h) = job.spec.target_opts.write_hint {
            target
                .set_write_hint(h, job.direct)
                .map_err(|source| RunError::Prepare {
                    path: format!("{} (fcntl write hint)", t.path.display()),
                    source,
                })?;
        }
        // fio's fadvise_hint: a failure is only worth a warning in fio,
        // and changes no I/O.
        if let Some(a) = job.spec.syncs.fadvise.advice(job.spec.rw.is_random()) {
            let _ = target.advise(off, len, a);
        }
        out.push(target);
    }
    Ok(out)
}

/// fio's `end_fsync` / `fsync_on_close`: once a job that writes has
/// done its I/O without an error, one fsync of each of its targets,
/// through its engine; they count as the job's syncs, and a failed one is
/// the job's error.
fn end_sync<E: drivelab_engine::engine::Engine>(
    engine: &mut E,
    job: &PlannedJob,
    o: &mut JobOutcome,
    stop: &AtomicBool,
) -> Result<(), JobError> {
    let clean = o.errors.iter().all(|e| e.passed) && !o.interrupted;
    if !(job.spec.syncs.at_end() && job.writes && clean) {
        return Ok(());
    }
    let mut s = crate::job::sync::EndSync::new((0..job.targets.len() as u32).collect());
    let lc = drivelab_engine::ioloop::LoopConfig {
        stop: Some(stop),
        ..Default::default()
    };
    drivelab_engine::ioloop::run(engine, &mut s, &lc)?;
    o.dirs[3].ios += s.done;
    if let Some((target, errno)) = s.failed {
        o.errors.push(crate::job::outcome::IoFailure {
            op: drivelab_engine::io::Op::Fsync,
            target,
            offset: 0,
            len: 0,
            errno,
            passed: false,
            unreadable: None,
            detail: None,
        });
    }
    Ok(())
}

/// Whether the run is stopped, or the job's group ended by `exitall`.
pub(crate) fn ended(stop: &AtomicBool, cfg: &JobConfig) -> bool {
    stop.load(Ordering::Relaxed)
        || cfg
            .group_end
            .as_ref()
            .is_some_and(|f| f.load(Ordering::Relaxed))
}

/// Sleep `d` (`startdelay`), waking early when the run is stopped or the
/// group ended.
pub(crate) fn start_delay(d: Duration, stop: &AtomicBool, cfg: &JobConfig) {
    let end = Instant::now() + d;
    while !ended(stop, cfg) {
        let now = Instant::now();
        if now >= end {
            break;
        }
        std::thread::sleep((end - now).min(Duration::from_millis(20)));
    }
}

/// Run the job, then what fio does after it: read back and check what it
/// wrote (`verify` with `do_verify`). `ratemin` is held while it runs
/// ([`crate::job::rate::MinRate`]).
pub(crate) fn run_checked<E: drivelab_engine::engine::Engine>(
    engine: &mut E,
    job: &PlannedJob,
    cfg: &JobConfig,
    stop: &AtomicBool,
    progress: &AtomicU64,
    finished: &[AtomicBool],
) -> Result<JobOutcome, JobError> {
    // wait_for: until every clone of the named job has finished.
    while !ended(stop, cfg)
        && !job
            .wait_for
            .iter()
            .all(|&i| finished[i].load(Ordering::Acquire))
    {
        std::thread::sleep(Duration::from_millis(5));
    }
    start_delay(job.spec.startdelay, stop, cfg);
    let (name, index) = (&cfg.log_name.0, cfg.log_name.1.saturating_sub(1));
    // verify_state_load: read before any I/O, so a missing state stops
    // the job before it starts.
    let state = match job.verify.is_some() && job.spec.verify.state_load {
        true => Some(
            crate::job::verify_state::load(job.spec.aux_path.as_deref(), name, index)
                .map_err(JobError::Config)?,
        ),
        false => None,
    };
    let (mut o, mut logs) = match crate::job::zbd::trims_reset(&cfg.zbd, &job.spec) {
        // zonemode=zbd: the job's trims are zone resets.
        Some(set) => run_job(
            &mut crate::job::zbd::ZoneTrims::new(engine, set),
            cfg,
            now_ns(),
            stop,
            progress,
        )?,
        // verify_only: the writes are counted as done and not issued, as
        // fio completes them; the read-back below checks the target.
        None if job.spec.verify.only && job.writes => {
            let max_len = usize::try_from(job.spec.max_bs()).unwrap_or(usize::MAX);
            let fill = drivelab_engine::buf::Fill::Zeroed;
            let mut null =
                drivelab_engine::engines::null::Null::new(engine.depth(), max_len, fill)?;
            run_job(&mut null, cfg, now_ns(), stop, progress)?
        }
        None => run_job(engine, cfg, now_ns(), stop, progress)?,
    };
    // Under openfiles the open set closes files as it goes, so the end
    // sync would meet closed ones: only jobs that keep every file open.
    if !cfg.lazy_files {
        end_sync(engine, job, &mut o, stop)?;
    }
    let issued: u64 = o.dirs[..3].iter().map(|d| d.ios).sum();
    let moved: u64 = o.dirs[..3].iter().map(|d| d.bytes).sum();
    let v = &job.spec.verify;
    if job.verify.is_some() && job.writes && v.state_save && !v.only {
        // Cut short (the run stopped, or its runtime ended first).
        if o.interrupted || cfg.io_limit.is_some_and(|l| moved < l) {
            if let Err(e) =
                crate::job::verify_state::save(job.spec.aux_path.as_deref(), name, index, issued)
            {
                eprintln!("drivelab: {e}");
            }
        }
    }
    let clean = o.errors.iter().all(|e| e.passed)
        && o.verify_failure.is_none()
        && !o.verify_stopped
        && !o.interrupted;
    // cfg.verify also fills writes with buffer_pattern; only a job with
    // verify reads back.
    let verified = job.verify.is_some();
    if let (Some(content), true) = (
        &cfg.verify,
        verified && clean && job.spec.verify.do_verify && job.writes,
    ) {
        let extents = match o.verify_left.take() {
            // verify_backlog: what the job did not check as it went.
            Some(left) => left,
            None => {
                // The counts hold the failed I/Os too (as fio's total_ios);
                // verify_state_load: only as far as the saved run got.
                let issued = state.map_or(issued, |n| n.min(issued));
                let mut v = if let Some(r) = &cfg.replay {
                    crate::job::verify::replayed_extents(&r.log().ios, issued)
                } else if job.spec.verify.experimental {
                    crate::job::verify::issued_writes(&cfg.gen, issued)?
                } else {
                    let random = cfg.gen.lines.iter().any(|l| l.random_pct > 0);
                    let in_order = random && job.spec.randommap && !job.spec.random_lfsr;
                    crate::job::verify::written_extents(&cfg.gen, issued, in_order)?
                };
                if !o.failed_writes.is_empty() {
                    let key = |io: &drivelab_engine::io::IoDesc| (io.target, io.offset, io.len);
                    let mut failed: Vec<_> = o.failed_writes.iter().map(key).collect();
                    failed.sort_unstable();
                    v.retain(|io| failed.binary_search(&key(io)).is_err());
                }
                v
            }
        };
        let mut extents = extents;
        let trimmed = o.trimmed.take();
        if let Some(t) = trimmed.as_ref().filter(|t| !t.verify_zero) {
            // trim_verify_zero=0: trimmed blocks are not read back.
            extents.retain(|io| !t.holds(io));
        }
        let mut rb = crate::job::verify::ReadBack::new(&extents, content);
        rb.extras = Some(&cfg.extras);
        rb.logs = Some(&mut logs);
        rb.trimmed = trimmed.as_ref().filter(|t| t.verify_zero);
        // The verify reads count as the job's reads: the job's batching.
        let mut lc = drivelab_engine::ioloop::LoopConfig {
            stop: Some(stop),
            ..Default::default()
        };
        cfg.batch.apply(&mut lc);
        let t = now_ns();
        let st = drivelab_engine::ioloop::run(engine, &mut rb, &lc)?;
        // fio counts its verify phase as the job's reads, and its time.
        o.dirs[0].merge(&rb.stats);
        // The device check compares per target: the verify reads reached
        // the device as the job's own did.
        for (pt, &(ios, bytes)) in o.per_target.iter_mut().zip(&rb.per_target) {
            pt[0].0 += ios;
            pt[0].1 += bytes;
        }
        o.runtime_ns += st.ended.saturating_sub(t);
        o.verify_failure = rb.failure;
        o.err_count.merge(&rb.errors);
        o.interrupted |= st.interrupted;
    }
    logs.finish(now_ns(), o.runtime_ns)
        .map_err(JobError::Config)?;
    Ok(o)
}

/// Where the job threads of a group wait once set up, so that they all start
/// measuring together. The coordinator opens it when every thread it started
/// has arrived or given up, or calls the start off (when a thread could not
/// be started): nobody is left waiting for a thread that never came.
pub(crate) struct StartGate {
    /// (threads that arrived or gave up, the verdict once given: true = go).
    state: Mutex<(usize, Option<bool>)>,
    cv: Condvar,
}

impl StartGate {
    pub(crate) fn new() -> StartGate {
        StartGate {
            state: Mutex::new((0, None)),
            cv: Condvar::new(),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, (usize, Option<bool>)> {
        // The state stays consistent even if a holder panicked.
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// A place at the gate for one job thread. Dropped unused (the job
    /// failed while setting up, or panicked), it counts as having arrived.
    pub(crate) fn ticket(&self) -> Ticket<'_> {
        Ticket {
            gate: self,
            used: false,
        }
    }

    fn arrive(&self) {
        let mut g = self.lock();
        g.0 += 1;
        self.cv.notify_all();
    }

    /// Wait until `n` threads have arrived or given up, then let them go
    /// (`go`) or call the start off.
    #[cfg(test)]
    pub(crate) fn open(&self, n: usize, go: bool) {
        self.all_arrived(n);
        self.release(go);
    }

    /// Wait until `n` threads have arrived or given up (none is let go).
    pub(crate) fn all_arrived(&self, n: usize) {
        let mut g = self.lock();
        while g.0 < n {
            g = self.cv.wait(g).unwrap_or_else(|p| p.into_inner());
        }
    }

    /// Let the arrived threads go (`go`) or call the start off.
    pub(crate) fn release(&self, go: bool) {
        let mut g = self.lock();
        g.1 = Some(go);
        self.cv.notify_all();
    }
}

/// One job thread's place at a [`StartGate`].
pub(crate) struct Ticket<'a> {
    gate: &'a StartGate,
    used: bool,
}

impl Ticket<'_> {
    /// Arrive and wait for the verdict: true = start, false = called off.
    pub(crate) fn wait(mut self) -> bool {
        self.used = true;
        self.gate.arrive();
        let mut g = self.gate.lock();
        loop {
            if let Some(go) = g.1 {
                return go;
            }
            g = self.gate.cv.wait(g).unwrap_or_else(|p| p.into_inner());
        }
    }
}

impl Drop for Ticket<'_> {
    fn drop(&mut self) {
        if !self.used {
            self.gate.arrive();
        }
    }
}

/// What a running job watches and reports to: the stop flag, its progress
/// counter and which jobs have finished (for `wait_for`).
#[derive(Clone, Copy)]
pub(crate) struct Ctl<'a> {
    pub(crate) stop: &'a AtomicBool,
    pub(crate) progress: &'a AtomicU64,
    pub(crate) finished: &'a [AtomicBool],
}

/// One job handed to its engine front ([`crate::engines::front`]): the
/// plan, the claims and file sets the run holds, the job and its loop
/// configuration, its place at the start gate and what it reports to.
pub struct JobRun<'a> {
    /// The whole plan.
    pub plan: &'a Plan,
    /// The run's claims, by target.
    pub claims: &'a [Option<Claim>],
    /// The run's claimed file sets and donors.
    pub sets: &'a RunSets,
    /// The job.
    pub job: &'a PlannedJob,
    /// Its loop configuration.
    pub cfg: &'a JobConfig,
    pub(crate) ticket: Ticket<'a>,
    pub(crate) ctl: Ctl<'a>,
}

impl<'a> JobRun<'a> {
    /// The job's targets, opened from the run's claims (read-only where
    /// the job does not write).
    pub fn open_targets(&self) -> Result<Vec<Target>, RunError> {
        open_targets(self.plan, self.claims, self.job)
    }

    /// Wait at the start gate: a job its group calls off never runs.
    pub fn start(self) -> Result<Started<'a>, RunError> {
        if !self.ticket.wait() {
            return Err(RunError::NotStarted {
                job: self.job.spec.name.clone(),
            });
        }
        // fio's ioscheduler: each claimed device of the job, for its run.
        let mut schedulers = Vec::new();
        if let Some(name) = &self.job.spec.target_opts.ioscheduler {
            for &ti in &self.job.targets {
                if let Some(c) = self.claims.get(ti).and_then(Option::as_ref) {
                    schedulers.push(c.switch_scheduler(name)?);
                }
            }
        }
        Ok(Started {
            plan: self.plan,
            job: self.job,
            cfg: self.cfg,
            ctl: self.ctl,
            _schedulers: schedulers,
        })
    }

    /// Wait at the start gate, then run the job on `engine`.
    pub fn start_and_run<E: drivelab_engine::engine::Engine>(
        self,
        engine: &mut E,
    ) -> Result<JobOutcome, RunError> {
        let started = self.start()?;
        started.run(engine, started.job)
    }
}

/// A job its group's start gate let go.
pub struct Started<'a> {
    pub(crate) plan: &'a Plan,
    pub(crate) job: &'a PlannedJob,
    pub(crate) cfg: &'a JobConfig,
    pub(crate) ctl: Ctl<'a>,
    /// The devices' schedulers switched for the run (`ioscheduler`),
    /// switched back when the job lets go of it.
    _schedulers: Vec<drivelab_device::claim::scheduler::SchedulerSwitch>,
}

impl Started<'_> {
    /// The run's error for a failure of this job.
    pub fn fail(&self, source: JobError) -> RunError {
        RunError::Job {
            job: self.job.spec.name.clone(),
            source,
        }
    }

    /// Run `job` (this job, or a copy of it the engine adjusted) on
    /// `engine`, then what fio does after it.
    pub fn run<E: drivelab_engine::engine::Engine>(
        &self,
        engine: &mut E,
        job: &PlannedJob,
    ) -> Result<JobOutcome, RunError> {
        let c = self.ctl;
        // fio's lockmem: held locked for the job's run.
        let lockmem = job.spec.target_opts.lockmem;
        let _pinned = (lockmem > 0)
            .then(|| drivelab_engine::sys::PinnedMemory::lock(lockmem as usize))
            .transpose()
            .map_err(|source| RunError::Prepare {
                path: format!("{lockmem} bytes of locked memory (lockmem)"),
                source,
            })?;
        run_checked(engine, job, self.cfg, c.stop, c.progress, c.finished).map_err(|e| self.fail(e))
    }
}

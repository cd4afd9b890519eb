//! fio's engines that move no device blocks: `ioengine=net` (a socket's
//! sends and receives, [`net`]), and the two that move no data at all: `ioengine=cpuio` (burn a share of
//! one CPU, [`crate::engines::noio::cpuio`]) and `ioengine=exec` (run a program beside the
//! other jobs, [`crate::engines::noio::exec`]). What they share: the engine choice and
//! options of a job, the checks made before anything runs, and the way fio
//! counts their work.
//!
//! fio runs both through its I/O loop as "I/Os" of zero bytes: a cpuio
//! job's every burn (one `cpuchunks` of spinning, or one round of sorts),
//! an exec job's every look at its program (a 50 ms sleep), each followed
//! by a think time. Its JSON shows them as reads with no bytes:
//! `read.total_ios` and the completion latencies (`clat_ns`, `lat_ns`,
//! `latency_*`, `iodepth_*`) count them, every byte and bandwidth figure is
//! zero. drivelab reports them the same way; the job's `usr_cpu`,
//! `sys_cpu` and `ctx` are its thread's, as for every job.
//!
//! Such a job has no target: the plan keeps fio's default file name for it
//! (as for the null engine), and nothing is opened or created.

pub mod cpuio;
pub mod exec;
pub mod net;

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use drivelab_stats::TimeSeries;

use crate::job::io_loop::JobConfig;
use crate::job::outcome::{JobError, JobOutcome};
use crate::plan::model::{Plan, PlannedJob};
use crate::{PlanError, SpecError};

/// Which of the two engines a job runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NoIoEngine {
    /// `cpuio`: burn CPU.
    Cpu,
    /// `exec`: run a program.
    Exec,
}

impl NoIoEngine {
    /// The engine for fio's name, if it is one of these.
    pub fn from_fio(name: &str) -> Option<NoIoEngine> {
        match name {
            "cpuio" => Some(NoIoEngine::Cpu),
            "exec" => Some(NoIoEngine::Exec),
            _ => None,
        }
    }

    /// fio's name.
    pub fn name(self) -> &'static str {
        match self {
            NoIoEngine::Cpu => "cpuio",
            NoIoEngine::Exec => "exec",
        }
    }
}

/// A job's engine (when it is one of these) and both engines' options.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct NoIoOpts {
    /// The engine (None: the job does I/O).
    pub engine: Option<NoIoEngine>,
    /// `cpuload`, `cpuchunks`, `cpumode`, `exit_on_io_done`.
    pub cpu: crate::engines::noio::cpuio::CpuOpts,
    /// `program`, `arguments`, `grace_time`, `std_redirect`.
    pub exec: crate::engines::noio::exec::ExecOpts,
}

impl NoIoOpts {
    /// The keys of both engines.
    pub const KEYS: &'static [&'static str] = &[
        "cpuload",
        "cpuchunks",
        "cpumode",
        "exit_on_io_done",
        "program",
        "arguments",
        "grace_time",
        "std_redirect",
    ];

    /// Set one of [`NoIoOpts::KEYS`] (value as written).
    pub fn set(&mut self, key: &str, v: &str) -> Result<(), SpecError> {
        if crate::engines::noio::cpuio::CpuOpts::KEYS.contains(&key) {
            self.cpu.set(key, v)
        } else {
            self.exec.set(key, v)
        }
    }
}

/// A whole number within the bounds the option table declares for `key`.
pub(crate) fn parse_bounded(key: &str, v: &str) -> Result<u64, SpecError> {
    let (min, max) = crate::spec::options::bounds(key);
    match v.trim().parse::<u64>() {
        Ok(n) if (min..=max).contains(&n) => Ok(n),
        _ => Err(SpecError::BadValue {
            key: key.to_string(),
            value: v.to_string(),
            expect: format!("a whole number from {min} to {max}"),
        }),
    }
}

/// The checks of a cpuio or exec job before anything runs (bad input:
/// one line naming the key).
pub fn check(spec: &crate::JobSpec) -> Result<(), PlanError> {
    let bad = |why: String| PlanError::Spec(SpecError::Invalid(why));
    let Some(engine) = spec.noio.engine else {
        return Ok(());
    };
    // What drivelab does not do for these jobs is refused, not ignored.
    if spec.logs.any() {
        return Err(bad(format!(
            "job '{}': write_bw_log/write_lat_log/write_iops_log/write_hist_log: drivelab writes no log files for a {} job (it moves no data); drop them from this job",
            spec.name,
            engine.name()
        )));
    }
    if spec.verify.is_some() {
        return Err(bad(format!(
            "job '{}': verify: a {} job moves no data, so there is nothing to verify; drop verify from this job",
            spec.name,
            engine.name()
        )));
    }
    if !spec.ramp_time.is_zero() {
        return Err(bad(format!(
            "job '{}': ramp_time: a {} job is measured from its start in drivelab; drop ramp_time from this job",
            spec.name,
            engine.name()
        )));
    }
    match spec.noio.engine {
        None => Ok(()),
        Some(NoIoEngine::Cpu) => {
            if spec.noio.cpu.cpuload.is_none() {
                return Err(bad(format!(
                    "job '{}': ioengine=cpuio needs cpuload (the percentage of one CPU to burn, 1 to 100)",
                    spec.name
                )));
            }
            if spec.runtime.is_none() && !spec.noio.cpu.exit_on_io_done {
                return Err(bad(format!(
                    "job '{}': a cpuio job burns until its runtime ends (fio's never ends without one): give runtime, or exit_on_io_done=1 beside an I/O job",
                    spec.name
                )));
            }
            Ok(())
        }
        Some(NoIoEngine::Exec) => crate::engines::noio::exec::check(spec).map_err(bad),
    }
}

/// The stonewall group of each planned job (a job with `stonewall` starts
/// the next), as the run starts them.
fn stonewall_groups(jobs: &[PlannedJob]) -> Vec<usize> {
    let mut g = 0;
    jobs.iter()
        .enumerate()
        .map(|(i, j)| {
            if i > 0 && j.stonewall {
                g += 1;
            }
            g
        })
        .collect()
}

/// A cpuio job that ends by `exit_on_io_done` alone (no runtime) needs a
/// job doing I/O in its own stonewall group: it waits for those (fio waits
/// for every I/O job of the run, later groups' too, which never start
/// while it runs: it would never end).
pub fn check_groups(jobs: &[PlannedJob]) -> Result<(), PlanError> {
    let groups = stonewall_groups(jobs);
    for (i, j) in jobs.iter().enumerate() {
        let cpu = &j.spec.noio.cpu;
        let lone = j.spec.noio.engine == Some(NoIoEngine::Cpu)
            && cpu.exit_on_io_done
            && j.runtime.is_none();
        let io_beside = jobs
            .iter()
            .zip(&groups)
            .any(|(o, &g)| g == groups[i] && !is_noio(&o.spec));
        if lone && !io_beside {
            return Err(PlanError::Spec(SpecError::Invalid(format!(
                "job '{}': exit_on_io_done: no job of its stonewall group does I/O, so it would never end; put an I/O job beside it or give runtime",
                j.spec.name
            ))));
        }
    }
    Ok(())
}

/// Whether a job runs one of these engines.
pub fn is_noio(spec: &crate::JobSpec) -> bool {
    spec.noio.engine.is_some()
}

/// What a running cpuio or exec job watches: the run's stop flag, its
/// group's end, its progress counter and which jobs have finished.
pub(crate) struct Watch<'a> {
    pub(crate) stop: &'a AtomicBool,
    pub(crate) progress: &'a AtomicU64,
    pub(crate) finished: &'a [AtomicBool],
}

/// Run a cpuio or exec job (after its group's start gate opened).
pub(crate) fn run(
    plan: &Plan,
    job: &PlannedJob,
    cfg: &JobConfig,
    w: Watch<'_>,
) -> Result<JobOutcome, JobError> {
    let mut tally = Tally::new(job, cfg, w.progress)?;
    if let Some(c) = &cfg.status {
        c.enter();
    }
    let ended = || {
        w.stop.load(Ordering::Relaxed)
            || cfg
                .group_end
                .as_ref()
                .is_some_and(|f| f.load(Ordering::Relaxed))
    };
    let deadline = job.runtime.map(|r| tally.start + r);
    let end = End::new(deadline, &ended);
    let mut o = match job.spec.noio.engine {
        Some(NoIoEngine::Exec) => {
            let program =
                crate::engines::noio::exec::run(&job.spec, job.runtime, &end, &mut tally)?;
            let mut o = tally.finish();
            o.program = program;
            o
        }
        _ => {
            // exit_on_io_done: every job of its stonewall group that does
            // I/O has finished (none: never). fio waits for every I/O job
            // of the run, later groups' too, which cannot start while it
            // runs; those of earlier groups have finished.
            let groups = stonewall_groups(&plan.jobs);
            let own = plan
                .jobs
                .iter()
                .position(|j| std::ptr::eq(j, job))
                .map_or(0, |i| groups[i]);
            let io_jobs: Vec<usize> = plan
                .jobs
                .iter()
                .enumerate()
                .filter(|&(i, j)| groups[i] == own && !is_noio(&j.spec))
                .map(|(i, _)| i)
                .collect();
            let io_done = || {
                !io_jobs.is_empty()
                    && io_jobs
                        .iter()
                        .all(|&i| w.finished[i].load(Ordering::Acquire))
            };
            crate::engines::noio::cpuio::run(&job.spec.noio.cpu, &end, &io_done, &mut tally);
            tally.finish()
        }
    };
    o.interrupted = w.stop.load(Ordering::Relaxed);
    if let Some(c) = &cfg.status {
        c.leave(&o);
    }
    Ok(o)
}

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
    live: Option<std::sync::Arc<crate::job::outcome::LiveCounters>>,
    status: Option<std::sync::Arc<crate::run::status::StatusCell>>,
    usage: drivelab_engine::sys::ThreadUsage,
    faults: (u64, u64),
}

impl<'a> Tally<'a> {
    fn new(job: &PlannedJob, cfg: &JobConfig, progress: &'a AtomicU64) -> Result<Self, JobError> {
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
    fn finish(self) -> JobOutcome {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_engines_are_chosen_by_fio_names_and_keep_them() {
        let mut j = crate::JobSpec::default();
        j.set("ioengine", Some("cpuio")).unwrap();
        assert_eq!(j.noio.engine, Some(NoIoEngine::Cpu));
        assert_eq!(crate::engines::files::engine_name(&j), "cpuio");
        j.set("ioengine", Some("exec")).unwrap();
        assert_eq!(crate::engines::files::engine_name(&j), "exec");
        j.set("ioengine", Some("psync")).unwrap();
        assert_eq!(j.noio.engine, None);
        assert_eq!(crate::engines::files::engine_name(&j), "psync");
    }

    #[test]
    fn exit_on_io_done_without_runtime_needs_an_io_job_in_its_group() {
        let job = |opts: &[(&str, &str)]| {
            let mut j = crate::JobSpec::default();
            j.set("filename", Some("t")).unwrap();
            for (k, v) in opts {
                j.set(k, Some(v)).unwrap();
            }
            j
        };
        let burn = job(&[
            ("name", "burn"),
            ("ioengine", "cpuio"),
            ("cpuload", "10"),
            ("exit_on_io_done", "1"),
        ]);
        let io = job(&[("name", "io"), ("ioengine", "null"), ("size", "1m")]);
        let opts = crate::PlanOptions { force: false };
        let e = crate::plan(&[(burn.clone(), false)], &opts)
            .unwrap_err()
            .to_string();
        assert!(e.contains("exit_on_io_done"), "{e}");
        assert!(crate::plan(&[(io.clone(), false), (burn.clone(), false)], &opts).is_ok());
        let e = crate::plan(&[(io, false), (burn, true)], &opts)
            .unwrap_err()
            .to_string();
        assert!(e.contains("stonewall group"), "{e}");
    }

    #[test]
    fn bad_values_name_their_key() {
        let mut j = crate::JobSpec::default();
        for (k, v) in [
            ("cpuload", "0"),
            ("cpuload", "101"),
            ("cpumode", "spin"),
            ("cpuchunks", "0"),
            ("std_redirect", "maybe"),
            ("grace_time", "-1"),
        ] {
            let e = j.set(k, Some(v)).unwrap_err().to_string();
            assert!(e.contains(k), "{k}={v}: {e}");
        }
        j.set("cpuload", Some("100")).unwrap();
        j.set("cpumode", Some("qsort")).unwrap();
        assert_eq!(j.noio.cpu.cpuload, Some(100));
    }

    #[test]
    fn a_cpuio_job_needs_its_load_and_an_end_and_an_exec_job_its_program() {
        let mut j = crate::JobSpec::default();
        j.set("ioengine", Some("cpuio")).unwrap();
        let e = check(&j).unwrap_err().to_string();
        assert!(e.contains("cpuload"), "{e}");
        j.set("cpuload", Some("10")).unwrap();
        let e = check(&j).unwrap_err().to_string();
        assert!(e.contains("runtime"), "{e}");
        j.set("exit_on_io_done", Some("1")).unwrap();
        assert!(check(&j).is_ok());
        // What drivelab does not do for such a job is refused.
        let mut r = j.clone();
        r.set("ramp_time", Some("1")).unwrap();
        let e = check(&r).unwrap_err().to_string();
        assert!(e.contains("ramp_time"), "{e}");
        let mut v = j.clone();
        v.set("verify", Some("crc32c")).unwrap();
        let e = check(&v).unwrap_err().to_string();
        assert!(e.contains("verify") && e.contains("cpuio"), "{e}");
        let mut l = j.clone();
        l.set("write_lat_log", Some("x")).unwrap();
        let e = check(&l).unwrap_err().to_string();
        assert!(e.contains("write_lat_log"), "{e}");
        let mut x = crate::JobSpec::default();
        x.set("ioengine", Some("exec")).unwrap();
        let e = check(&x).unwrap_err().to_string();
        assert!(e.contains("program"), "{e}");
        x.set("program", Some("/nonexistent/drivelab-no-such-program"))
            .unwrap();
        let e = check(&x).unwrap_err().to_string();
        assert!(e.contains("program") && e.contains("nonexistent"), "{e}");
        x.set("program", Some("sh")).unwrap();
        assert!(check(&x).is_ok(), "sh is found on PATH");
    }
}

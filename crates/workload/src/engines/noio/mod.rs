//! fio's engines that move no device blocks: `ioengine=net` (a socket's
//! sends and receives, [`net`]), and the two that move no data at all: `ioengine=cpuio` (burn a share of
//! one CPU, [`crate::engines::noio::cpuio`]) and `ioengine=exec` (run a program beside the
//! other jobs, [`crate::engines::noio::exec`]). What they share: the checks
//! made before anything runs and the way fio counts their work. Their
//! options are blocks of [`crate::engines::opts`]; their fronts, which choose
//! and run them, are in [`crate::engines::fronts`].
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
pub mod tally;

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

pub use crate::engines::opts::noio::{NoIoEngine, NoIoOpts};
use crate::job::io_loop::JobConfig;
use crate::job::outcome::{JobError, JobOutcome};
use crate::plan::model::{Plan, PlannedJob};
use crate::{PlanError, SpecError};
use tally::{End, Tally};

/// The checks of a cpuio or exec job before anything runs (bad input:
/// one line naming the key).
pub fn check(spec: &crate::JobSpec) -> Result<(), PlanError> {
    let bad = |why: String| PlanError::Spec(SpecError::Invalid(why));
    let Some(engine) = spec.engine.noio.engine else {
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
    if spec.verify.kind.is_some() {
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
    match spec.engine.noio.engine {
        None => Ok(()),
        Some(NoIoEngine::Cpu) => {
            if spec.engine.noio.cpu.cpuload.is_none() {
                return Err(bad(format!(
                    "job '{}': ioengine=cpuio needs cpuload (the percentage of one CPU to burn, 1 to 100)",
                    spec.name
                )));
            }
            if spec.runtime.is_none() && !spec.engine.noio.cpu.exit_on_io_done {
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
        let cpu = &j.spec.engine.noio.cpu;
        let lone = j.spec.engine.noio.engine == Some(NoIoEngine::Cpu)
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
    spec.engine.noio.engine.is_some()
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
    let mut o = match job.spec.engine.noio.engine {
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
            crate::engines::noio::cpuio::run(&job.spec.engine.noio.cpu, &end, &io_done, &mut tally);
            tally.finish()
        }
    };
    o.interrupted = w.stop.load(Ordering::Relaxed);
    if let Some(c) = &cfg.status {
        c.leave(&o);
    }
    Ok(o)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_engines_are_chosen_by_fio_names_and_keep_them() {
        let mut j = crate::JobSpec::default();
        j.set("ioengine", Some("cpuio")).unwrap();
        assert_eq!(j.engine.noio.engine, Some(NoIoEngine::Cpu));
        assert_eq!(crate::engines::files::engine_name(&j), "cpuio");
        j.set("ioengine", Some("exec")).unwrap();
        assert_eq!(crate::engines::files::engine_name(&j), "exec");
        j.set("ioengine", Some("psync")).unwrap();
        assert_eq!(j.engine.noio.engine, None);
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
        assert_eq!(j.engine.noio.cpu.cpuload, Some(100));
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

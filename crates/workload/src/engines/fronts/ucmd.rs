//! The front of fio's `io_uring_cmd` engine (`cmd_type=nvme`): each I/O
//! one NVMe command through io_uring passthrough to /dev/ngXnY
//! ([`crate::engines::ucmd`], [`drivelab_engine::ucmd`]).

use std::path::PathBuf;

use crate::engines::front::EngineFront;
use crate::job::outcome::JobOutcome;
use crate::plan::model::{Plan, PlanError, PlannedJob};
use crate::run::error::RunError;
use crate::run::start::JobRun;
use crate::spec::kinds::EngineKind;

/// fio's `io_uring_cmd`.
pub struct IoUringCmdFront;

/// The io_uring_cmd front.
pub static IO_URING_CMD: IoUringCmdFront = IoUringCmdFront;

impl EngineFront for IoUringCmdFront {
    fn names(&self) -> &'static [&'static str] {
        &["io_uring_cmd"]
    }

    fn choose(&self, spec: &mut crate::JobSpec, name: &str) {
        super::choose_kind(spec, EngineKind::IoUringCmd, name);
    }

    fn queues(&self) -> bool {
        true
    }

    fn planned_path(&self, job: &str, filename: &str) -> Result<Option<PathBuf>, PlanError> {
        crate::engines::ucmd::block_of(job, filename).map(Some)
    }

    /// Its targets are planned as the namespaces' block devices; fio
    /// names the /dev/ngXnY the job gave.
    fn filenames(&self, _plan: &Plan, job: &PlannedJob) -> Vec<String> {
        job.spec.filenames.clone()
    }

    fn run(&self, r: JobRun<'_>) -> Result<JobOutcome, RunError> {
        let spec = &r.job.spec;
        let targets = crate::engines::ucmd::open_targets(r.plan, r.claims, r.job)?;
        let mut e = drivelab_engine::ucmd::UringCmd::new(
            targets,
            spec.iodepth,
            spec.max_bs() as usize,
            spec.engine.io.ucmd(spec.fio_engine()),
            spec.buffers.fill(spec.randseed),
        )
        .map_err(|source| RunError::Engine {
            engine: "io_uring_cmd",
            source,
        })?;
        let mut o = r.start_and_run(&mut e)?;
        crate::job::io_loop::attach_details(
            &mut o.errors,
            e.failures().iter().map(|f| (&f.io, f.detail.as_str())),
        );
        Ok(o)
    }
}

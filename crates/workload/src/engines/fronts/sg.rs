//! The front of fio's `sg` engine: each I/O one SCSI command through
//! SG_IO, or queued on a disk's /dev/sgN in fio's asynchronous mode
//! ([`crate::engines::sg`], [`drivelab_engine::sg`]).

use std::path::PathBuf;

use crate::engines::front::EngineFront;
use crate::job::outcome::JobOutcome;
use crate::plan::model::{PlanError, PlannedTarget};
use crate::run::error::RunError;
use crate::run::start::JobRun;
use crate::spec::kinds::EngineKind;

/// fio's `sg`.
pub struct SgFront;

/// The sg front.
pub static SG: SgFront = SgFront;

impl EngineFront for SgFront {
    fn names(&self) -> &'static [&'static str] {
        &["sg"]
    }

    fn choose(&self, spec: &mut crate::JobSpec, name: &str) {
        super::choose_kind(spec, EngineKind::Sg, name);
    }

    fn check(&self, spec: &crate::JobSpec, targets: &[&PlannedTarget]) -> Result<(), PlanError> {
        crate::engines::sg::check_targets(spec, targets.iter().copied())
    }

    fn planned_path(&self, job: &str, filename: &str) -> Result<Option<PathBuf>, PlanError> {
        if crate::engines::sg::is_node(filename) {
            crate::engines::sg::block_of(job, filename).map(Some)
        } else {
            Ok(None)
        }
    }

    fn run(&self, r: JobRun<'_>) -> Result<JobOutcome, RunError> {
        let spec = &r.job.spec;
        let max_bs = spec.max_bs() as usize;
        let targets = crate::engines::sg::open_targets(r.plan, r.claims, r.job)?;
        let fill = spec.buffers.fill(spec.randseed);
        let mut e = if crate::engines::sg::asynchronous(spec, r.claims, r.job) {
            // fio's asynchronous mode on /dev/sgN: queued commands.
            drivelab_engine::sg::Sg::new_async(
                targets,
                spec.iodepth,
                max_bs,
                spec.engine.sg.options(),
                fill,
            )
        } else {
            drivelab_engine::sg::Sg::new(targets, max_bs, spec.engine.sg.options(), fill)
        }
        .map_err(|source| RunError::Engine {
            engine: "sg",
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

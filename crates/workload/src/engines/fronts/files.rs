//! The fronts of fio's filesystem engines, which run on psync's loop, one
//! file operation per I/O ([`crate::engines::files`]): `filecreate`,
//! `filestat`, `filedelete`, `dircreate`, `dirstat`, `dirdelete` (one
//! operation per path), `ftruncate`, `falloc` (one call per I/O on the
//! file's descriptor), and `e4defrag` (each write moves a donor's blocks
//! into the file, [`crate::engines::e4defrag`]).

use drivelab_device::claim::SetKind;
use drivelab_engine::fileops::{FdOp, PathOp, StatKind};

use crate::engines::front::EngineFront;
use crate::engines::opts::files::FileEngine;
use crate::job::outcome::JobOutcome;
use crate::plan::model::{PlanError, PlannedTarget};
use crate::run::error::RunError;
use crate::run::start::JobRun;
use crate::spec::kinds::EngineKind;

/// One filesystem engine: its name and the operation it does.
pub struct FileFront {
    names: &'static [&'static str],
    engine: FileEngine,
}

/// `filecreate`.
pub static FILECREATE: FileFront = FileFront {
    names: &["filecreate"],
    engine: FileEngine::Path(PathOp::Create, SetKind::Files),
};
/// `filestat`.
pub static FILESTAT: FileFront = FileFront {
    names: &["filestat"],
    engine: FileEngine::Path(PathOp::Stat(StatKind::Stat), SetKind::Files),
};
/// `filedelete`.
pub static FILEDELETE: FileFront = FileFront {
    names: &["filedelete"],
    engine: FileEngine::Path(PathOp::Delete, SetKind::Files),
};
/// `dircreate`.
pub static DIRCREATE: FileFront = FileFront {
    names: &["dircreate"],
    engine: FileEngine::Path(PathOp::Create, SetKind::Dirs),
};
/// `dirstat`.
pub static DIRSTAT: FileFront = FileFront {
    names: &["dirstat"],
    engine: FileEngine::Path(PathOp::Stat(StatKind::Stat), SetKind::Dirs),
};
/// `dirdelete`.
pub static DIRDELETE: FileFront = FileFront {
    names: &["dirdelete"],
    engine: FileEngine::Path(PathOp::Delete, SetKind::Dirs),
};
/// `ftruncate`.
pub static FTRUNCATE: FileFront = FileFront {
    names: &["ftruncate"],
    engine: FileEngine::Fd(FdOp::Ftruncate),
};
/// `falloc`.
pub static FALLOC: FileFront = FileFront {
    names: &["falloc"],
    engine: FileEngine::Fd(FdOp::Falloc),
};
/// `e4defrag`.
pub static E4DEFRAG: FileFront = FileFront {
    names: &["e4defrag"],
    engine: FileEngine::Defrag,
};

impl EngineFront for FileFront {
    fn names(&self) -> &'static [&'static str] {
        self.names
    }

    fn check(&self, spec: &crate::JobSpec, targets: &[&PlannedTarget]) -> Result<(), PlanError> {
        crate::engines::e4defrag::check(spec, targets.iter().copied())
    }

    fn choose(&self, spec: &mut crate::JobSpec, _name: &str) {
        // One file operation per I/O, one at a time: psync's loop.
        spec.files.set_engine(self.engine);
        spec.ioengine = EngineKind::Psync;
        spec.ioengine_as_written = None;
    }

    fn run(&self, r: JobRun<'_>) -> Result<JobOutcome, RunError> {
        let engine = self.engine.name();
        let made = |source| RunError::Engine { engine, source };
        let max_bs = r.job.spec.max_bs() as usize;
        match self.engine {
            FileEngine::Fd(op) => {
                let targets = r.open_targets()?;
                let mut e =
                    drivelab_engine::fileops::FdOps::new(targets, op, max_bs).map_err(made)?;
                r.start_and_run(&mut e)
            }
            FileEngine::Defrag => {
                let targets = r.open_targets()?;
                let mut e = r
                    .sets
                    .donors
                    .engine(r.plan, r.claims, r.job, targets, max_bs)
                    .map_err(made)?;
                r.start_and_run(&mut e)
            }
            FileEngine::Path(..) => {
                let mut e = r.sets.engine(r.job, max_bs).map_err(made)?;
                r.start_and_run(&mut e)
            }
        }
    }
}

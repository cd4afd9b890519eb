//! The interface every fio engine's front implements, and the handle a job
//! spec keeps of the one its `ioengine` chose. A front is what the workload
//! knows of one fio engine: the names fio users write for it, what choosing
//! it records in the job spec, its checks of a job's targets, and how it
//! builds its engine and runs a job on it. Its options are its block's,
//! under `engines/opts/`. The fronts are listed once, in [`crate::engines::registry`];
//! nothing else matches on engine names.

use std::fmt;
use std::ops::Deref;
use std::path::PathBuf;

use crate::job::outcome::JobOutcome;
use crate::plan::model::{Plan, PlanError, PlannedJob, PlannedTarget};
use crate::run::error::RunError;
use crate::run::start::JobRun;

/// One fio engine as the workload sees it.
pub trait EngineFront: Sync {
    /// The names fio users write for it (`ioengine=`); the first is its own.
    fn names(&self) -> &'static [&'static str];

    /// Record in `spec` that `ioengine=name` chose this front: the engine
    /// its I/O runs on ([`crate::JobSpec::ioengine`]) and the front's own
    /// choice (which file operation, which of cpuio and exec).
    fn choose(&self, spec: &mut crate::JobSpec, name: &str);

    /// The chosen front's checks of a job and its planned targets, before
    /// anything is created or written (bad input: one line naming the key).
    fn check(&self, _spec: &crate::JobSpec, _targets: &[&PlannedTarget]) -> Result<(), PlanError> {
        Ok(())
    }

    /// Whether the job's I/O reaches its planned targets (false for the
    /// engines that move no device blocks: null, net, cpuio, exec).
    fn on_targets(&self) -> bool {
        true
    }

    /// Whether the engine keeps `iodepth` I/Os in flight (io_uring,
    /// io_uring_cmd); the others have one at a time.
    fn queues(&self) -> bool {
        false
    }

    /// Whether the job's I/O is a stream its peer can end (net): the job
    /// loop then watches for that end.
    fn streams(&self) -> bool {
        false
    }

    /// The block device a `filename` of the job is planned and claimed as,
    /// when it is not the file itself (io_uring_cmd's /dev/ngXnY, sg's
    /// /dev/sgN: their disk's block device; the engine opens the node).
    fn planned_path(&self, _job: &str, _filename: &str) -> Result<Option<PathBuf>, PlanError> {
        Ok(None)
    }

    /// The job's file names as fio reports them (`filename`): its planned
    /// targets' paths.
    fn filenames(&self, plan: &Plan, job: &PlannedJob) -> Vec<String> {
        job.targets
            .iter()
            .map(|&i| plan.targets[i].path.display().to_string())
            .collect()
    }

    /// Build the engine and run the job on it: the front calls
    /// [`JobRun::start_and_run`] (or `start` and `run`) once.
    fn run(&self, r: JobRun<'_>) -> Result<JobOutcome, RunError>;
}

/// The front a job spec chose (io_uring unless `ioengine` says otherwise).
/// Copied with the spec; two are equal when they are the same front.
#[derive(Clone, Copy)]
pub struct Front(&'static dyn EngineFront);

impl Front {
    /// The handle of `front`.
    pub fn new(front: &'static dyn EngineFront) -> Front {
        Front(front)
    }

    /// The front's own name.
    pub fn name(self) -> &'static str {
        self.0.names()[0]
    }

    /// The front.
    pub fn get(self) -> &'static dyn EngineFront {
        self.0
    }
}

impl Deref for Front {
    type Target = dyn EngineFront;

    fn deref(&self) -> &(dyn EngineFront + 'static) {
        self.0
    }
}

impl fmt::Debug for Front {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Front({})", self.name())
    }
}

impl PartialEq for Front {
    fn eq(&self, o: &Front) -> bool {
        self.name() == o.name()
    }
}

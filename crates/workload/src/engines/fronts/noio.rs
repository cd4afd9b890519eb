//! The fronts of fio's engines that move no data: `cpuio` (burn a share of
//! one CPU) and `exec` (run a program). Both are planned as the null
//! engine's jobs and run as a job thread of their own, no I/O loop
//! ([`crate::engines::noio`]).

use crate::engines::front::EngineFront;
use crate::engines::noio::Watch;
use crate::engines::opts::noio::NoIoEngine;
use crate::job::outcome::JobOutcome;
use crate::plan::model::{PlanError, PlannedTarget};
use crate::run::error::RunError;
use crate::run::start::JobRun;
use crate::spec::kinds::EngineKind;

/// cpuio or exec.
pub struct NoIoFront {
    names: &'static [&'static str],
    engine: NoIoEngine,
}

/// `cpuio`.
pub static CPUIO: NoIoFront = NoIoFront {
    names: &["cpuio"],
    engine: NoIoEngine::Cpu,
};

/// `exec`.
pub static EXEC: NoIoFront = NoIoFront {
    names: &["exec"],
    engine: NoIoEngine::Exec,
};

impl EngineFront for NoIoFront {
    fn names(&self) -> &'static [&'static str] {
        self.names
    }

    fn choose(&self, spec: &mut crate::JobSpec, _name: &str) {
        spec.engine.noio.engine = Some(self.engine);
        spec.ioengine = EngineKind::Null;
        spec.ioengine_as_written = None;
    }

    fn check(&self, spec: &crate::JobSpec, _targets: &[&PlannedTarget]) -> Result<(), PlanError> {
        crate::engines::noio::check(spec)
    }

    fn on_targets(&self) -> bool {
        false
    }

    fn run(&self, r: JobRun<'_>) -> Result<JobOutcome, RunError> {
        // No engine, no target: the job's thread burns or watches.
        let s = r.start()?;
        let w = Watch {
            stop: s.ctl.stop,
            progress: s.ctl.progress,
            finished: s.ctl.finished,
        };
        crate::engines::noio::run(s.plan, s.job, s.cfg, w).map_err(|e| s.fail(e))
    }
}

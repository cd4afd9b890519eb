//! Why a run failed to start or finish: one error type for every stage of
//! a run, kept in a leaf file so the engine fronts that open targets and
//! the run that drives them both name it without importing each other.

use crate::job::outcome::JobError;

/// Why a run failed to start or finish.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// fio's `ioscheduler`: the device's scheduler could not be switched.
    #[error(transparent)]
    Scheduler(#[from] drivelab_device::claim::scheduler::SchedulerError),
    /// Preparing a file failed.
    #[error("cannot prepare {path}: {source}")]
    Prepare {
        /// The file.
        path: String,
        /// The cause.
        source: std::io::Error,
    },
    /// Opening a target for the job failed.
    #[error("cannot open {path}: {source}{hint}")]
    Open {
        /// The target.
        path: String,
        /// The cause.
        source: std::io::Error,
        /// Advice.
        hint: String,
    },
    /// A target the run writes could not be claimed (refused by the safety
    /// assessment, held by another process, or not confirmed).
    #[error(transparent)]
    Claim(drivelab_device::claim::ClaimError),
    /// The engine could not be set up.
    #[error("cannot set up the {engine} engine: {source}")]
    Engine {
        /// Engine name.
        engine: &'static str,
        /// The cause.
        source: std::io::Error,
    },
    /// The operating system would not start a thread for a job.
    #[error("cannot start a thread for job '{job}': {source}; run fewer jobs (numjobs)")]
    Spawn {
        /// Job name.
        job: String,
        /// The cause.
        source: std::io::Error,
    },
    /// The job was set up but not started, because another job of its
    /// stonewall group could not be started.
    #[error("job '{job}' was not started: another job of its group could not be")]
    NotStarted {
        /// Job name.
        job: String,
    },
    /// A job failed while running.
    #[error("job '{job}' failed: {source}")]
    Job {
        /// Job name.
        job: String,
        /// The cause.
        source: JobError,
    },
}

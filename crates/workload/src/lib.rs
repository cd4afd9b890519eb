//! Workloads: everything between what the user typed and the I/O loop.
//!
//! - Specification ([`spec`], [`options`], [`jobfile`], [`presets`],
//!   [`size`]): a [`JobSpec`] is built the same way from command-line flags,
//!   fio job-file keys and Iometer presets; every option is declared once in
//!   [`options::OPTIONS`] (name, kind, default, bounds, unit, help) and set
//!   through [`JobSpec::set`].
//! - Planning ([`plan`]): specs resolved against their targets — sizes
//!   known, bounds checked, every target claimed for writing through the
//!   device crate — nothing written yet.
//! - Multi-file jobs and filesystem engines ([`files`]): `nrfiles`,
//!   `file_service_type`, `unlink`, `fallocate`, `ioengine=filecreate` and
//!   the other file and directory operations.
//! - Generation ([`gen`], with [`drivelab_patterns::prng`]): the offset/operation stream with exact
//!   sizes and mixes.
//! - Pacing and checking ([`rate`], [`verify`]): fio's per-direction
//!   `rate`/`rate_process=poisson` clocks, and the `verify` content rule
//!   with the read-back pass of a writing job.
//! - Running ([`jobloop`], [`exec`]): each job is a driver of the engine's
//!   one I/O loop; `exec` runs the job threads, the device sampler and the
//!   progress line and assembles the one result struct
//!   ([`drivelab_report::RunReport`]) including the device check
//!   ([`check`]).

pub mod batch;
pub mod check;
pub mod cpuio;
pub mod dedupe;
pub mod e4defrag;
pub mod engopts;
pub mod errors;
pub mod exec;
pub mod execjob;
pub mod files;
pub mod fio_pattern;
pub mod flow;
pub mod gen;
pub mod iolog;
pub mod jobfile;
pub mod jobloop;
pub mod latency_target;
pub mod logs;
pub mod net;
pub mod noio;
pub mod numa;
pub mod openfiles;
pub mod options;
pub mod plan;
pub mod presets;
pub mod prio;
pub mod rate;
pub mod samples;
pub mod status;
pub mod verify;
pub mod zbd;

pub mod sg;
pub mod size;
pub mod spec;
pub mod steadystate;
pub mod ucmd;

pub use exec::{execute, execute_with_status, Progress};
pub use plan::{plan, Plan, PlanError, PlanOptions};
pub use size::{human_bytes, parse_bytes, parse_duration, SizeSpec};
pub use spec::{
    check_filename_splits, check_total_jobs, split_filenames, AccessLine, Distribution, EngineKind,
    JobSpec, RwMode, WriteKind, DEFAULT_LOG_INTERVAL, MAX_TOTAL_JOBS,
};
pub use status::StatusOptions;

/// Why a specification was rejected. Every message names the option (and
/// for job files the line) and says what would be accepted.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum SpecError {
    /// The option name is not one drivelab knows.
    #[error("unknown option '{key}'{hint}; 'drivelab run --help' lists the supported options")]
    UnknownOption {
        /// The option as typed.
        key: String,
        /// A suggestion (" (did you mean 'bs'?)") or empty.
        hint: String,
    },
    /// The value does not parse for this option.
    #[error("bad value '{value}' for {key}: expected {expect}")]
    BadValue {
        /// The option.
        key: String,
        /// The value as typed.
        value: String,
        /// What the option accepts.
        expect: String,
    },
    /// An option that takes a value was given none.
    #[error("option '{0}' needs a value (e.g. --{0}=VALUE)")]
    MissingValue(String),
    /// Options that contradict each other, or a missing required one.
    #[error("{0}")]
    Invalid(String),
    /// A job-file problem, with its line number.
    #[error("{path}:{line}: {source}")]
    JobFile {
        /// The job file.
        path: String,
        /// 1-based line number.
        line: usize,
        /// What was wrong on that line.
        source: Box<SpecError>,
    },
    /// The preset name is not known.
    #[error("unknown preset '{0}'; known presets: {1}")]
    UnknownPreset(String, String),
}

//! Workloads: everything between what the user typed and the I/O loop,
//! one folder per stage:
//!
//! - [`spec`]: options, fio job files, presets, sizes and data patterns,
//!   into a [`JobSpec`]; every option is declared once, in
//!   [`spec::options::OPTIONS`] or beside its engine's option block
//!   (`engines/opts/`); [`spec::options::all`] lists both.
//! - [`plan`]: specs resolved against their targets, every bound checked,
//!   every target claimed for writing through the device crate; nothing
//!   written yet.
//! - [`engines`]: one file per fio engine front (its options, checks and
//!   how it opens); the engines that move no device blocks in
//!   [`engines::noio`].
//! - [`job`]: one job's I/O loop and what shapes its I/O (generator,
//!   pacing, flow, priorities, verify, zones, error policy, ...).
//! - [`run`]: a whole plan run to one [`drivelab_report::RunReport`],
//!   with the device check ([`run::device_check`]).

pub mod engines;
pub mod job;
pub mod plan;
pub mod run;
pub mod spec;

pub use plan::model::{Plan, PlanError, PlanOptions};
pub use plan::planner::plan;
pub use run::execute::{execute, execute_with_status, Progress};
pub use run::status::StatusOptions;
pub use spec::jobspec::{
    check_filename_splits, check_total_jobs, split_filenames, AccessLine, Distribution, EngineKind,
    JobSpec, RwMode, WriteKind, DEFAULT_LOG_INTERVAL, MAX_TOTAL_JOBS,
};
pub use spec::size::{human_bytes, parse_bytes, parse_duration, SizeSpec};

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
    /// An fio option drivelab refuses by a named rule
    /// ([`crate::spec::refused::REFUSED`]).
    #[error("option '{key}' is refused ({rule}): {reason}")]
    Refused {
        /// The option as fio names it.
        key: String,
        /// The rule it falls under.
        rule: &'static str,
        /// Why.
        reason: &'static str,
    },
    /// A value of an option that drivelab refuses by a named rule
    /// ([`crate::spec::refused::REFUSED_VALUES`]).
    #[error("value '{value}' of {key} is refused ({rule}): {reason}")]
    RefusedValue {
        /// The option as fio names it.
        key: String,
        /// The value as typed.
        value: String,
        /// The rule it falls under.
        rule: &'static str,
        /// Why.
        reason: &'static str,
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

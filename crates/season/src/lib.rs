//! `drivelab season`: bring an SSD to its used, steady state and show what
//! that costs (seed 004, made rigorous by SNIA's PTS).
//!
//! Every drive goes through the stages asked for, in order, each a module:
//!
//! - [`purge`]: the strongest purge the drive offers, by erase's own
//!   methods (NVMe Sanitize, NVMe Format with a secure-erase setting, ATA
//!   SANITIZE), else a whole-device discard, else "not purged" — then the
//!   measurements are not of a fresh drive, and the result says so.
//! - [`seqwrite`]: the sequential fill (N passes of 128 KiB writes at
//!   queue depth 32 over every LBA) with its whole-drive write series and
//!   the cache cliff ([`cliff`]); and the image restore (an image written
//!   sector by sector, or a trace's writes replayed: [`image`]).
//! - [`round`]: rounds of the workload until the PTS steady-state test
//!   ([`steady`]) passes or the round limit is reached; the same runner
//!   measures the fresh vs used comparison.
//!
//! [`run`] holds the drives (erase's plan: refusals, consent, the device
//! claim every write goes through), runs each on its own thread, keeps the
//! [`journal`] so an interrupted season resumes where it stopped, and
//! returns the one [`result::SeasonReport`]; [`plots`] draws its charts;
//! [`figures`] reads a stored one back, with its figures and headline.

pub mod cliff;
pub mod figures;
pub mod image;
pub mod journal;
pub mod plots;
pub mod purge;
pub mod result;
pub mod round;
pub mod run;
pub mod seqwrite;
pub mod steady;

use std::path::PathBuf;

pub use result::SeasonReport;
pub use run::{season, Frontend, Options, Request, StageFigures, Stages, Status};

/// Everything that can go wrong, each saying what to do next.
#[derive(Debug, thiserror::Error)]
pub enum SeasonError {
    /// An option is wrong (bad input, nothing written).
    #[error("{0}")]
    BadOption(String),
    /// The drives were refused, or not confirmed (nothing written).
    #[error("{0}")]
    Refused(String),
    /// The erase crate failed (plan, claim, purge).
    #[error(transparent)]
    Erase(#[from] drivelab_erase::EraseError),
    /// An I/O error on the device.
    #[error("{device}: {what}: {source}")]
    Io {
        /// Device node.
        device: String,
        /// What was being done.
        what: String,
        /// The error.
        #[source]
        source: std::io::Error,
    },
    /// A command or stage failed on the device.
    #[error("{device}: {what}: {why}")]
    Command {
        /// Device node.
        device: String,
        /// What.
        what: String,
        /// Why.
        why: String,
    },
    /// The journal cannot be read or written.
    #[error("season journal {path}: {why}")]
    Journal {
        /// The file.
        path: PathBuf,
        /// What failed.
        why: String,
    },
    /// A journal exists but is for another season.
    #[error("{device}: the season journal {path} is for {why}; rerun that same command with --resume, or delete the journal to start over")]
    ResumeMismatch {
        /// Device node.
        device: String,
        /// The journal.
        path: PathBuf,
        /// What differs.
        why: String,
    },
    /// A plot file cannot be written.
    #[error("plot {path}: {why}")]
    Plot {
        /// The file.
        path: PathBuf,
        /// What failed.
        why: String,
    },
}

impl SeasonError {
    /// Whether this is a refusal before anything was written (exit 2).
    pub fn is_refusal(&self) -> bool {
        match self {
            SeasonError::BadOption(_)
            | SeasonError::Refused(_)
            | SeasonError::ResumeMismatch { .. } => true,
            SeasonError::Erase(e) => e.is_refusal(),
            _ => false,
        }
    }
}

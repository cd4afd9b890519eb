//! Whole-drive erase of many drives at once: method choice, scheduling,
//! verification, resumption and signed certificates (`drivelab erase`).
//!
//! Seeds 000 and 003 describe the job: write every block of many drives as
//! fast as each allows without the host link becoming the limit. A command
//! the drive executes itself (WRITE SAME, Write Zeroes, an offloaded
//! BLKZEROOUT) moves one block or none over the bus per range, so N drives
//! take as long as the slowest; streamed writes move every byte, so once the
//! bus saturates time grows with N. This crate does the erase and proves it.
//!
//! Every drive goes through five stages, one module each:
//!
//! - [`plan`]: the drives (refusals, the exclusive hold, confirmation), the
//!   method per drive ([`method`]), the strategy, the stream's tuning
//!   ([`tune`]) and the dry-run estimates.
//! - [`journal`]: resumable progress on disk, begun or resumed before the
//!   first write.
//! - [`issue`]: the method's commands front to back (chunked device
//!   commands, the io_uring stream, whole-device format and sanitize),
//!   retries and skipped ranges, the final flush.
//! - [`verify`]: NIST SP 800-88 sampling and the O_DIRECT read-back.
//! - [`cert`]: the signed JSON certificate, its HTML page, and which keys a
//!   verifier trusts.
//!
//! [`run`] takes every drive through the stages under the strategy and is
//! the one entry point ([`erase`]); [`sched`] shares the host link among
//! the drives; [`outcome`] is what comes back ([`figures`]: read back from
//! the store, with its figures); every write goes through the device crate's claim.
//! The command line parses, calls [`erase`] (or [`cert::verify_file`]) and
//! prints; it asks the user through a [`Frontend`].

pub mod cert;
pub mod clock;
mod drive_run;
pub mod figures;
pub mod issue;
pub mod journal;
pub mod outcome;
pub mod plan;
pub mod run;
pub mod sched;
pub mod verify;

use std::path::PathBuf;

pub use outcome::{EraseResult, Outcome, Report, Summary};
pub use plan::method::{self, Method};
pub use plan::tune;
pub use plan::{Consent, Drive, Options, Parties, Plan, Request, StallLimit, Strategy, VerifyMode};
pub use run::{erase, Frontend};

/// Everything that can go wrong in an erase, each saying what to do next.
#[derive(Debug, thiserror::Error)]
pub enum EraseError {
    /// No drives were named.
    #[error("no drives given: name the whole drives to erase, e.g. drivelab erase /dev/sdb --yes --confirm-serial SERIAL")]
    NoDrives,
    /// An option is out of its range.
    #[error("{0}")]
    BadOption(String),
    /// A drive may not be erased (not a whole drive, named twice, unsafe);
    /// one line naming every reason.
    #[error("{0}")]
    Refused(String),
    /// The user did not confirm (or mistyped) a drive.
    #[error("{0}")]
    NotConfirmed(String),
    /// `--method` names no method.
    #[error("unknown method '{0}': use auto, zeroout, write-same, sct-write-same, nvme-write-zeroes, nvme-format, nvme-sanitize, ata-sanitize, scsi-sanitize, ata-security-erase, ata-security-erase-enhanced, discard or stream")]
    UnknownMethod(String),
    /// The drive lacks the requested method.
    #[error("{device}: method {method} is not available: {why} (use --method auto to let drivelab choose)")]
    MethodUnavailable {
        /// Device node.
        device: String,
        /// Method name.
        method: String,
        /// Why.
        why: String,
    },
    /// The journal cannot be read or written.
    #[error("resume journal {path}: {why}")]
    Journal {
        /// The journal file.
        path: PathBuf,
        /// What failed.
        why: String,
    },
    /// An output file (journal, certificate, key) is refused, or cannot be
    /// created or put in place.
    #[error(transparent)]
    Output(#[from] drivelab_device::output::OutputError),
    /// A journal exists but belongs to a different erase.
    #[error("{device}: the resume journal {path} is for {why}; rerun that same command with --resume, or delete the journal to start over")]
    ResumeMismatch {
        /// Device node.
        device: String,
        /// The journal.
        path: PathBuf,
        /// What differs.
        why: String,
    },
    /// The signing key cannot be read or created.
    #[error("signing key {path}: {why}")]
    Key {
        /// Key file or dir.
        path: PathBuf,
        /// What failed.
        why: String,
    },
    /// A certificate cannot be built or written.
    #[error("certificate: {0}")]
    Certificate(String),
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
    /// A passthrough command failed.
    #[error("{device}: {what}: {why}")]
    Command {
        /// Device node.
        device: String,
        /// The command.
        what: String,
        /// The device's or driver's answer.
        why: String,
    },
    /// `--on-error abort` and a range failed after its retries.
    #[error("{device}: {phase} failed at LBA {lba} (+{blocks} blocks) after {attempts} attempts: {why}; --on-error retry-skip would skip the range and go on")]
    Aborted {
        /// Device node.
        device: String,
        /// erase or verify.
        phase: String,
        /// First LBA of the failing range.
        lba: u64,
        /// Blocks in the range.
        blocks: u64,
        /// Attempts made.
        attempts: u32,
        /// The error.
        why: String,
    },
    /// Under retry-skip, whole commands in a row failed block by block:
    /// the drive (gone, or replaced by one that fails everything) takes no
    /// writes, and narrowing the rest of it would write nothing.
    #[error("{device}: erase failed: every block of LBA {lba} (+{blocks} blocks) failed to write, as did every block of the {before} failed command(s) before it: {why}; the drive no longer takes writes")]
    Unwritable {
        /// Device node.
        device: String,
        /// First LBA of the last failed command.
        lba: u64,
        /// Its blocks.
        blocks: u64,
        /// Wholly failed commands before it.
        before: u32,
        /// The error.
        why: String,
    },
    /// The pattern cannot be generated.
    #[error(transparent)]
    Pattern(#[from] drivelab_patterns::PatternError),
    /// The device cannot be probed.
    #[error(transparent)]
    Probe(#[from] drivelab_device::caps::ProbeError),
}

impl EraseError {
    /// Whether the error is a refusal of what was asked (bad input, unsafe
    /// or busy drive, no confirmation), raised before anything was written:
    /// the command line's exit status 2. Anything else is a failure (1).
    pub fn is_refusal(&self) -> bool {
        matches!(
            self,
            EraseError::NoDrives
                | EraseError::BadOption(_)
                | EraseError::Refused(_)
                | EraseError::NotConfirmed(_)
                | EraseError::UnknownMethod(_)
                | EraseError::MethodUnavailable { .. }
        )
    }
}

pub use drivelab_engine::narrow::aligned;

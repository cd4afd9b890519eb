//! Whole-drive erase of many drives at once: method choice, scheduling,
//! verification, resumption and signed certificates (`drivelab erase`).
//!
//! Seeds 000 and 003 describe the job: write every block of many drives as
//! fast as each allows without the host link becoming the limit. A command
//! the drive executes itself (WRITE SAME, Write Zeroes, an offloaded
//! BLKZEROOUT) moves one block or none over the bus per range, so N drives
//! take as long as the slowest; streamed writes move every byte, so once the
//! bus saturates time grows with N. This crate does the erase and proves it:
//!
//! - [`method`]: the methods and `auto`'s choice per drive.
//! - [`work`]: the per-drive loop for every method (chunked commands, the
//!   tuned io_uring stream), retries and skipped ranges, the journal.
//! - [`sched`]: the bus limit, the round-robin turn, live progress.
//! - [`tune`]: transfer length and queue depth, adjusted while running.
//! - [`verify`]: NIST SP 800-88 sampling and O_DIRECT read-back.
//! - [`journal`]: resumable progress on disk.
//! - [`cert`]: the signed JSON certificate and its HTML page.
//!
//! The command line (safety checks, confirmation, display) lives in the CLI
//! crate; this crate assumes the drives it is given may be written.

pub mod cert;
pub mod clock;
pub mod journal;
pub mod method;
pub mod sched;
pub mod tune;
pub mod verify;
pub mod work;

use std::path::PathBuf;

pub use method::Method;
pub use work::{plan_drive, run_all, Drive, Options, Outcome, Strategy, VerifyMode};

/// Everything that can go wrong in an erase, each saying what to do next.
#[derive(Debug, thiserror::Error)]
pub enum EraseError {
    /// `--method` names no method.
    #[error("unknown method '{0}': use auto, zeroout, write-same, sct-write-same, nvme-write-zeroes, nvme-format, nvme-sanitize, ata-sanitize, discard or stream")]
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
    /// The pattern cannot be generated.
    #[error(transparent)]
    Pattern(#[from] drivelab_patterns::PatternError),
    /// The device cannot be probed.
    #[error(transparent)]
    Probe(#[from] drivelab_device::caps::ProbeError),
}

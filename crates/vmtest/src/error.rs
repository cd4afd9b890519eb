//! Why a VM run could not produce results, each saying what to do next.

use std::path::PathBuf;

/// The command that installs and caches what the harness needs.
pub const SETUP_HINT: &str = "run `bash tests/vm/setup.sh` as root from the repository root";

/// A failure to prepare, boot or read back a test VM.
#[derive(Debug, thiserror::Error)]
pub enum VmError {
    /// The host lacks a tool or file the harness needs.
    #[error("{what} not found at {path}: {SETUP_HINT}")]
    Missing {
        /// What is missing (e.g. "qemu-system-x86_64").
        what: &'static str,
        /// Where it was looked for.
        path: PathBuf,
    },
    /// `kernel.env` in the cache dir is incomplete or unreadable.
    #[error("kernel cache {path} is incomplete ({detail}): {SETUP_HINT}")]
    KernelCache {
        /// The kernel.env file.
        path: PathBuf,
        /// What is wrong with it.
        detail: String,
    },
    /// A module the harness needs is not in the kernel's modules.dep.
    #[error("kernel module {0} is not in modules.dep: the kernel package lacks it (the -cloud flavour does); {SETUP_HINT}")]
    ModuleMissing(String),
    /// modules.dep has a dependency loop.
    #[error("modules.dep has a dependency cycle through {0}: rerun setup to regenerate it")]
    ModuleCycle(String),
    /// A host file operation failed.
    #[error("{action} {path}: {source}")]
    Io {
        /// What was being done ("write", "read", "create").
        action: &'static str,
        /// The file or directory.
        path: PathBuf,
        /// The OS error.
        source: std::io::Error,
    },
    /// The VM configuration is not usable (e.g. a bad serial).
    #[error("invalid VM configuration: {0}")]
    Config(String),
    /// QEMU could not be started.
    #[error("cannot start {program}: {source}; {SETUP_HINT}")]
    Spawn {
        /// The QEMU binary.
        program: PathBuf,
        /// The OS error.
        source: std::io::Error,
    },
    /// The guest did not finish in time; QEMU was killed.
    #[error("guest did not power off within {timeout_s} s (killed); console log {log}, last lines:\n{tail}")]
    Timeout {
        /// The timeout, seconds.
        timeout_s: u64,
        /// The console log file (kept).
        log: PathBuf,
        /// The console log's last lines.
        tail: String,
    },
    /// The guest exited without running the test script to its end.
    #[error("guest stopped ({status}) without finishing the test script; console log {log}, last lines:\n{tail}")]
    NoResults {
        /// QEMU's exit status.
        status: String,
        /// The console log file (kept).
        log: PathBuf,
        /// The console log's last lines.
        tail: String,
    },
    /// Building the static drivelab binary failed.
    #[error("building the static drivelab binary failed ({detail}); try by hand: {command}")]
    Build {
        /// The command that was run.
        command: String,
        /// Exit status and stderr tail.
        detail: String,
    },
    /// A result file from the guest is not valid JSON.
    #[error("guest result {path} is not valid JSON ({source}); the guest script wrote it wrongly")]
    BadJson {
        /// The file.
        path: PathBuf,
        /// The parse error.
        source: serde_json::Error,
    },
}

//! What a plan is: the resolved targets and jobs of a run, its options,
//! and why a plan could not be made. A leaf of the plan stage, so the
//! engine fronts and the run read a plan without importing the planner.

use std::path::PathBuf;
use std::time::Duration;

use drivelab_device::blockdev::BlockDevice;

use crate::job::types::Region;
use crate::JobSpec;

/// Options that are not part of a job: they govern the whole run.
#[derive(Debug, Clone, Default)]
pub struct PlanOptions {
    /// Override the safety refusals that `--force` may override.
    pub force: bool,
}

/// Why a plan could not be made. Every message says what to do; nothing was
/// written when one is returned.
#[derive(Debug, thiserror::Error)]
pub enum PlanError {
    /// The spec itself is wrong.
    #[error(transparent)]
    Spec(#[from] crate::SpecError),
    /// A target is missing, unreadable or of the wrong kind.
    #[error("{path}: {why}")]
    Target {
        /// The target as given.
        path: String,
        /// What is wrong and what to do.
        why: String,
    },
}

impl PlanError {
    pub(crate) fn target(path: &str, why: impl Into<String>) -> PlanError {
        PlanError::Target {
            path: path.to_string(),
            why: why.into(),
        }
    }
}

/// One target of the run.
#[derive(Debug, Clone)]
pub struct PlannedTarget {
    /// The path as given (or the name, for the null engine).
    pub path: PathBuf,
    /// A block device (not a regular file).
    pub is_block: bool,
    /// Size in bytes (a file's size after any extension the plan calls for).
    pub size: u64,
    /// Logical block size, bytes (512 for files unless the device under them says more).
    pub logical_block: u32,
    /// The block device whose counters corroborate this target: the device
    /// itself, or the one under a file's filesystem. None for the null engine
    /// and for files on tmpfs and the like.
    pub device: Option<BlockDevice>,
    /// The file does not exist yet and will be created.
    pub create: bool,
    /// Size before the run (a file the plan grows keeps its first
    /// `existing_size` bytes untouched).
    pub existing_size: u64,
    /// Write data into the grown part before the run, so reads hit data
    /// rather than holes (otherwise the file is only extended).
    pub layout: bool,
}

/// One job (one clone, with numjobs > 1) of the run.
#[derive(Debug, Clone)]
pub struct PlannedJob {
    /// The spec it came from.
    pub spec: JobSpec,
    /// Clone number within its spec (0-based).
    pub clone: u32,
    /// Indices into [`Plan::targets`].
    pub targets: Vec<usize>,
    /// The region on each of those targets.
    pub regions: Vec<Region>,
    /// O_DIRECT.
    pub direct: bool,
    /// Stop after this many bytes (None: time-based).
    pub io_limit: Option<u64>,
    /// Stop after this long measuring (None: until io_limit).
    pub runtime: Option<Duration>,
    /// Alignment of random offsets.
    pub align: u64,
    /// Wait for earlier jobs to finish first.
    pub stonewall: bool,
    /// Whether the job writes or trims (opens targets read-write).
    pub writes: bool,
    /// Reporting group (fio's `groupid`): a new one at each stonewall or `new_group`.
    pub group: u32,
    /// Content of written blocks and what reads check (`verify`).
    pub verify: Option<crate::job::types::Content>,
    /// Jobs (indices into [`Plan::jobs`]) that must finish before this one
    /// starts (`wait_for`).
    pub wait_for: Vec<usize>,
    /// `zonemode=zbd`: the job's zone settings.
    pub zbd: Option<crate::job::types::ZbdJob>,
    /// `read_iolog`: the log the job replays (its targets are the log's
    /// files).
    pub replay: Option<std::sync::Arc<crate::job::types::Loaded>>,
}

/// A resolved run.
#[derive(Debug, Clone)]
pub struct Plan {
    /// Distinct targets (a path used by several jobs appears once).
    pub targets: Vec<PlannedTarget>,
    /// Jobs in order.
    pub jobs: Vec<PlannedJob>,
    /// The user overrode the overridable safety refusals (`--force`); the
    /// claims taken when the run starts carry it.
    pub force: bool,
}

/// Default region for the null engine when no size is given: 1 GiB of
/// offsets (nothing is touched).
pub const NULL_DEFAULT_SIZE: u64 = 1 << 30;

//! What one job did and why it stopped: the outcome and statistics a job
//! thread hands back, and the errors that end a job. A leaf of the job
//! stage, so the run, the status snapshots and the engines read a job's
//! results without importing its loop.

use drivelab_stats::{LatencyHistogram, Series, Welford};

pub use crate::job::types::LiveCounters;
use drivelab_engine::io::{IoDesc, Op};

/// Per-direction statistics of one job.
#[derive(Debug, Clone)]
pub struct DirStats {
    /// Completed I/Os.
    pub ios: u64,
    /// Bytes moved.
    pub bytes: u64,
    /// Latency histogram, ns (submission to completion).
    pub lat: LatencyHistogram,
    /// Running moments of the latency, ns.
    pub moments: Welford,
    /// Latency from the intended issue time, ns (rate-limited runs only).
    pub lat_intended: Option<LatencyHistogram>,
    /// Running moments of the latency from the intended issue time, ns
    /// (empty unless rate-limited).
    pub intended_moments: Welford,
    /// Latency per I/O priority (jobs with `cmdprio*` only).
    pub prios: Vec<crate::job::prio::PrioStat>,
}

impl DirStats {
    pub(crate) fn new(rated: bool) -> DirStats {
        DirStats {
            ios: 0,
            bytes: 0,
            lat: LatencyHistogram::new(),
            moments: Welford::new(),
            lat_intended: rated.then(LatencyHistogram::new),
            intended_moments: Welford::new(),
            prios: Vec::new(),
        }
    }

    /// Add another job's statistics (per-job stats merge by addition).
    pub fn merge(&mut self, o: &DirStats) {
        self.ios += o.ios;
        self.bytes += o.bytes;
        self.lat.merge(&o.lat);
        self.moments.merge(&o.moments);
        self.intended_moments.merge(&o.intended_moments);
        crate::job::prio::merge(&mut self.prios, &o.prios);
        match (&mut self.lat_intended, &o.lat_intended) {
            (Some(a), Some(b)) => a.merge(b),
            (None, Some(b)) => self.lat_intended = Some(b.clone()),
            _ => {}
        }
    }
}

/// Failed I/Os kept per job.
pub const MAX_ERRORS: usize = 16;

/// An I/O error a job met.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IoFailure {
    /// The operation.
    pub op: Op,
    /// Target index.
    pub target: u32,
    /// Byte offset.
    pub offset: u64,
    /// Length in bytes.
    pub len: u32,
    /// errno.
    pub errno: i32,
    /// The job went past it (`continue_on_error`).
    pub passed: bool,
    /// A failed read narrowed down after the job ended: the blocks that
    /// still cannot be read, as inclusive (first, last) LBA ranges. None
    /// when not narrowed (see `exec::narrow_failed_read`).
    pub unreadable: Option<Vec<(u64, u64)>>,
    /// What the device answered, in words, when the engine knows more
    /// than the errno (the sg engine: status, sense key, ASC/ASCQ, CDB).
    pub detail: Option<String>,
}

/// What a job did.
#[derive(Debug, Clone)]
pub struct JobOutcome {
    /// Statistics per direction: read, write, trim, sync ([`Op::index`]).
    pub dirs: [DirStats; 4],
    /// Measured time (after ramp), ns.
    pub runtime_ns: u64,
    /// Bytes and I/Os per target per direction (read, write, trim).
    pub per_target: Vec<[(u64, u64); 3]>,
    /// Per-interval series.
    pub series: Series,
    /// The failed I/Os, in completion order: the job stops at the first,
    /// as fio does by default, and the I/Os in flight with it complete,
    /// so more than one may fail (at most [`MAX_ERRORS`] are kept).
    pub errors: Vec<IoFailure>,
    /// I/Os that moved fewer bytes than asked, per direction: read, write,
    /// trim (fio's `short_ios`).
    pub short_ios: [u64; 3],
    /// Datagrams lost on the way per direction, read, write, trim (fio's
    /// `drop_ios`; only ioengine=net's udp counts any).
    pub drop_ios: [u64; 3],
    /// Stopped early by the stop flag (Ctrl-C).
    pub interrupted: bool,
    /// User and system CPU time of the job's thread, ns.
    pub cpu_user_ns: u64,
    /// System CPU time, ns.
    pub cpu_sys_ns: u64,
    /// Voluntary plus involuntary context switches.
    pub ctx_switches: u64,
    /// The first failed verify check (or the run's failure), in words; the
    /// job stops at it.
    pub verify_failure: Option<String>,
    /// fio's rate samples, latency ranges, depth distributions, page faults.
    pub samples: crate::job::samples::JobSamples,
    /// Errors met, passed or not (fio's `total_err`, `first_error`).
    pub err_count: crate::job::types::ErrorCount,
    /// Under `verify_backlog`: the writes not checked during the job.
    pub verify_left: Option<Vec<IoDesc>>,
    /// What `trim_percentage` trimmed, for the read-back (None: no trims).
    pub trimmed: Option<crate::job::trim::Trimmed>,
    /// Writes that failed and were gone past, under `verify`: not checked.
    pub failed_writes: Vec<IoDesc>,
    /// Ended by `verify_fatal` at a verify error it went past: no read-back
    /// pass follows.
    pub verify_stopped: bool,
    /// The depth the latency target search settled on (None: no search).
    pub latency_depth: Option<u32>,
    /// The steady-state figures (None: not watched, or not the judge of
    /// its group).
    pub steady: Option<crate::job::steadystate::SteadyOutcome>,
    /// `zonemode=zbd`: zone resets the job did (None for other jobs).
    pub zone_resets: Option<u64>,
    /// `ioengine=exec`: the program ended on its own with a failure, the
    /// job's error (None for other jobs; see [`crate::engines::noio::exec`]).
    pub program: Option<crate::job::types::ProgramFailure>,
}

/// Errors that end a job before it starts or while it runs.
#[derive(Debug, thiserror::Error)]
pub enum JobError {
    /// The generator rejected the configuration.
    #[error(transparent)]
    Gen(#[from] crate::job::types::GenError),
    /// A setting the job cannot run with.
    #[error("invalid job setting: {0}")]
    Config(String),
    /// The engine's submit/wait call failed.
    #[error("the I/O engine failed: {0}")]
    Engine(#[from] std::io::Error),
}

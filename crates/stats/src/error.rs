//! Errors from building and merging statistics.
//!
//! Recording never fails; only constructing a time series with an unusable
//! interval or merging series that do not line up can.

/// What went wrong, and what to do about it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum StatsError {
    /// A time series needs an interval of at least 1 ns.
    #[error("time series interval is 0 ns; give an interval of at least 1 ns (fio's log_avg_msec default is 1000 ms)")]
    ZeroInterval,
    /// Two series with different intervals cannot be added point by point.
    #[error("cannot merge time series with intervals of {ours} ns and {theirs} ns; record every job's series with the same interval")]
    IntervalMismatch {
        /// Interval of the series merged into, ns.
        ours: u64,
        /// Interval of the series merged from, ns.
        theirs: u64,
    },
    /// Two series that started at different instants would be misaligned.
    #[error("cannot merge time series that start at different instants; create every job's series from the run's one start instant")]
    StartMismatch,
}

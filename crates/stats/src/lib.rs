//! drivelab's constant-memory statistics: what the I/O engine records on
//! every completion and what the report prints.
//!
//! The crate exists so that measuring costs the engine a handful of
//! instructions per I/O, no allocation and no lock, whatever the run length:
//! each job owns its accumulators and the run adds them up at the end.
//!
//! - [`LatencyHistogram`]: log-linear latency histogram (HdrHistogram's
//!   bucketing, as fio's stat.c), 0.39 % error bound, fio percentiles.
//! - [`Welford`] and [`Summary`]: running mean / sample stddev (Welford
//!   1962), merged by Chan, Golub and LeVeque's formula (1979), as fio.
//! - [`TimeSeries`] and [`Series`]: per-interval IOPS, bandwidth, mean and
//!   p99 latency, idle intervals included, mergeable across jobs.
//! - [`survival::Survival`]: Kaplan–Meier percentiles of durations some of
//!   which were cut off before they ended, from two histograms.
//!
//! Each module's doc gives its sources and error bounds.
//!
//! ```
//! use std::time::Instant;
//! use drivelab_stats::{LatencyHistogram, TimeSeries, Welford, FIO_DEFAULT_PERCENTILES};
//!
//! let t0 = Instant::now();
//! // Per job, allocated before the run:
//! let mut clat = LatencyHistogram::new();
//! let mut moments = Welford::new();
//! let mut series = TimeSeries::new(1_000_000_000, t0)?; // 1 s intervals
//!
//! // On each completion (t since start, latency, bytes):
//! for (t_ns, lat_ns) in [(10_000u64, 80_000u64), (2_500_000_000, 95_000)] {
//!     clat.record(lat_ns);
//!     moments.record(lat_ns as f64);
//!     series.record(t_ns, lat_ns, 4096);
//! }
//!
//! // After the run: merge jobs by addition, then report.
//! let mut total = LatencyHistogram::new();
//! total.merge(&clat);
//! let p = total.percentiles(&FIO_DEFAULT_PERCENTILES);
//! assert_eq!(p.len(), 17);
//! let points = series.finish(3_000_000_000).points();
//! assert_eq!(points.len(), 3);
//! assert_eq!(points[1].iops, 0.0); // the idle second is a zero point
//! assert_eq!(moments.summary().count, 2);
//! # Ok::<(), drivelab_stats::StatsError>(())
//! ```

mod error;
mod histogram;
mod loglinear;
pub mod steady;
pub mod survival;
mod timeseries;
mod welford;

pub use error::StatsError;
pub use histogram::{
    Bucket, LatencyHistogram, FIO_DEFAULT_PERCENTILES, HIGHEST_TRACKABLE_NS, RELATIVE_ERROR,
};
pub use timeseries::{Series, TimePoint, TimeSeries, INTERVAL_P99_RELATIVE_ERROR};
pub use welford::{Summary, Welford};

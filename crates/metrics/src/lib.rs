//! Live figures of long work for Prometheus: `--metrics-listen ADDR` on
//! `run`, `test`, `erase` and `season` serves what the work has done so far over HTTP, in
//! the OpenMetrics text format or Prometheus's text format 0.0.4 (as the
//! scraper asks), read from the same result structs the final output is
//! built from, so the last scrape and the final result agree.
//!
//! One folder per stage:
//!
//! - `model/`: the figures. Every metric is declared once in
//!   [`model::catalog`] (name, type, unit, labels, help; the table in
//!   `docs/metrics.md` is generated from it); `model::run` reads a
//!   [`drivelab_report::RunReport`] (a `--status-interval` snapshot or the
//!   final result), `model::steps` a test sequence's steps,
//!   `model::erase` an erase's per-drive progress.
//! - `encode/`: the two text formats. Written here rather than through a
//!   client library: the figures are snapshots of result structs (a client
//!   library's registry wants live instruments counted in place, and its
//!   histograms want each observation, where ours come as the run's own
//!   bucket counts), and the libraries write OpenMetrics only, while
//!   `promtool check metrics` and older scrapers read text 0.0.4.
//! - `serve/`: a small HTTP/1.1 endpoint on std's `TcpListener` (GET
//!   /metrics), bound to loopback unless an address is given.
//!
//! Nothing here touches the I/O path: a run's figures come from the
//! snapshots `drivelab_workload::run::status` has each job copy at a turn
//! boundary, an erase's from the relaxed atomics its progress line reads.

pub mod encode;
pub mod model;
pub mod serve;

/// What can go wrong serving metrics.
#[derive(Debug, thiserror::Error)]
pub enum MetricsError {
    /// The address given to `--metrics-listen` is not an address.
    #[error("--metrics-listen {given}: not an address; give PORT (loopback), HOST:PORT or [IPv6]:PORT, e.g. 9400 or 0.0.0.0:9400")]
    BadAddress {
        /// What was given.
        given: String,
    },
    /// The address could not be bound.
    #[error("--metrics-listen {addr}: cannot listen there: {source}; choose a free port or an address of this machine")]
    Bind {
        /// The address.
        addr: String,
        /// Why.
        source: std::io::Error,
    },
}

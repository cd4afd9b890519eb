//! What the HTML report ([`crate::html`]) draws of the results whose
//! structs live in crates that depend on this one: a test, an erase, a
//! replay and an audit. Each is a view struct here, filled by a `From` impl
//! beside the result struct in the crate that owns it (steps, erase,
//! replay), so that a renamed field of a result is a compile error there,
//! not a figure that silently drops out of the page.

use serde::Serialize;
use serde_json::Value;

use drivelab_trace::compare::Criterion;
use drivelab_trace::Comparison;

/// A `drivelab test`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TestView {
    /// Device or file tested.
    pub target: String,
    /// Logical block size, bytes.
    pub block_size: u64,
    /// Capacity, logical blocks.
    pub capacity_blocks: u64,
    /// Every step passed.
    pub passed: bool,
    /// The steps, in order.
    pub steps: Vec<StepView>,
}

/// One step of a test.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct StepView {
    /// 1-based position in the sequence.
    pub index: u64,
    /// Steps in the sequence.
    pub of: u64,
    /// write, read, verify, write-verify.
    pub kind: String,
    /// DMM's name for the test type.
    pub test_type: String,
    /// sequential, random, butterfly.
    pub order: String,
    /// Pattern name.
    pub pattern: String,
    /// Blocks in the range.
    pub block_count: u64,
    /// The status as the result JSON words it.
    pub status: String,
    /// Start time, as the step log prints it.
    pub started: String,
    /// Bytes per second over all passes.
    pub bw_bytes: f64,
    /// Commands per second over all passes.
    pub iops: f64,
    /// Mean command completion time, ns.
    pub clat_mean_ns: f64,
    /// Failed commands.
    pub io_errors: u64,
    /// Blocks that miscompared.
    pub miscompares: u64,
    /// Wall time of all passes, ns.
    pub runtime_ns: u64,
    /// The first failure as one line.
    pub error: Option<String>,
    /// Each pass: its direction and bytes per second.
    pub passes: Vec<(String, f64)>,
}

/// A `drivelab erase`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct EraseView {
    /// Strategy, as the command line names it.
    pub strategy: String,
    /// Pattern name.
    pub pattern: String,
    /// Verification mode, as the command line names it.
    pub verify: String,
    /// Bytes written over all drives.
    pub total_bytes: u64,
    /// Seconds from the first drive's start to the last drive's end.
    pub complete_seconds: f64,
    /// MB/s (10^6) over all drives.
    pub aggregate_mb_per_s: f64,
    /// One per drive, in the order named.
    pub drives: Vec<DriveView>,
}

/// One drive of an erase.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct DriveView {
    /// Device node.
    pub device: String,
    /// Serial ("" when unknown).
    pub serial: String,
    /// Method, as the command line names it.
    pub method: String,
    /// The result in the certificate's words.
    pub result: String,
    /// Bytes covered by this run.
    pub bytes: u64,
    /// MB/s (10^6) of the erase.
    pub mb_per_s: f64,
    /// Seconds of the erase phase.
    pub erase_seconds: f64,
    /// Seconds of verification.
    pub verify_seconds: f64,
    /// Verification result in words.
    pub verification: String,
    /// Skipped ranges.
    pub exceptions: u64,
    /// The JSON certificate's path ("" when none).
    pub certificate: String,
    /// The error, when failed or stopped.
    pub error: Option<String>,
    /// Bytes done against time: (phase, seconds since the start, bytes).
    pub timeline: Vec<(String, f64, u64)>,
}

/// A `drivelab trace replay` (or an audit's replay).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ReplayView {
    /// Every field of the result that is a single value (not a list, an
    /// object or null), by its JSON name in the result's order, with its
    /// value as text: see [`scalar_fields`].
    pub fields: Vec<(String, String)>,
    /// The trace replayed.
    pub trace: String,
    /// The target it was replayed on.
    pub target: String,
    /// Why there is no score, when there is none.
    pub score_withheld: Option<String>,
    /// Mean time between the starts of consecutive requests, ms.
    pub head_to_head_ms: f64,
    /// 1000 / head_to_head_ms.
    pub iops: f64,
    /// Service time (issue to completion), ns.
    pub service_time_ns: Percentiles,
    /// Issue lateness, ns.
    pub lateness_ns: Percentiles,
}

/// A distribution's sample count and percentiles, ns.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Percentiles {
    /// Samples.
    pub count: u64,
    /// Median.
    pub p50: u64,
    /// 90th percentile.
    pub p90: u64,
    /// 99th percentile.
    pub p99: u64,
    /// 99.9th percentile.
    pub p999: u64,
}

/// A `drivelab trace audit`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct AuditView {
    /// Every criterion that could be checked passed.
    pub pass: bool,
    /// The original run's IO/s the score is held against.
    pub original_iops: Option<f64>,
    /// Where `original_iops` came from.
    pub original_iops_from: String,
    /// The criteria, each with its figure.
    pub criteria: Vec<Criterion>,
    /// The replay, recorded.
    pub replay: ReplayView,
    /// The recording of the replay against the trace.
    pub comparison: Comparison,
}

/// The fields of `result`'s JSON that hold a single value, in the JSON's
/// order, each with its value as the page prints it (a string as itself,
/// anything else as JSON). The table of a replay's own figures lists them
/// all, so a field the replay gains is shown without a change here; it is
/// read from the typed result's own serialisation, never by name.
pub fn scalar_fields<T: Serialize>(result: &T) -> Vec<(String, String)> {
    match serde_json::to_value(result) {
        Ok(Value::Object(o)) => o
            .into_iter()
            .filter(|(_, x)| !x.is_object() && !x.is_array() && !x.is_null())
            .map(|(k, x)| {
                let text = match x {
                    Value::String(s) => s,
                    other => other.to_string(),
                };
                (k, text)
            })
            .collect(),
        _ => Vec::new(),
    }
}

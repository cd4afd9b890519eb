//! A stored test result read back into [`TestReport`], and the figures
//! `drivelab compare` sets side by side and the one line `drivelab history`
//! shows of it. They are defined here, beside the struct they read, so
//! that a renamed field is a compile error rather than a figure that
//! silently drops out of comparisons.

use drivelab_report::metrics::{push, read_lenient, short, Metric};
use serde_json::Value;

use crate::result::TestReport;

impl TestReport {
    /// A test's result as stored (any version's JSON): each field missing
    /// takes its default; a result that cannot be read is an empty one.
    pub fn from_stored(v: &Value) -> TestReport {
        read_lenient(v).unwrap_or_default()
    }
}

/// A test's figures: rate, IOPS, mean latency and duration per step.
pub fn metrics(r: &TestReport) -> Vec<Metric> {
    let mut out = Vec::new();
    for s in &r.steps {
        // The stored index is already 1-based, as the step log numbers it.
        let p = format!("step {} {}", s.index, s.kind);
        let rate = s.bw_bytes / 1e6;
        push(&mut out, format!("{p} rate"), "MB/s", Some(rate), true);
        push(&mut out, format!("{p} IOPS"), "IOPS", Some(s.iops), true);
        let mean = s.clat_ns.mean / 1e3;
        push(
            &mut out,
            format!("{p} mean latency"),
            "µs",
            Some(mean),
            false,
        );
        let secs = s.runtime_ns as f64 / 1e9;
        push(&mut out, format!("{p} duration"), "s", Some(secs), false);
    }
    out
}

/// The number of steps and each step's rate.
pub fn headline(r: &TestReport) -> String {
    let rates: Vec<String> = r
        .steps
        .iter()
        .map(|s| format!("{} MB/s", short(s.bw_bytes / 1e6)))
        .collect();
    format!("{} step(s): {}", r.steps.len(), rates.join(", "))
}

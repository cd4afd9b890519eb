//! A stored replay or audit read back ([`SessionReport`],
//! [`AuditReport`]), and the figures `drivelab compare` sets side by side
//! and the one line `drivelab history` shows of a replay (an audit's are
//! its replay's). They are defined here, beside the struct they read, so
//! that a renamed field is a compile error rather than a figure that
//! silently drops out of comparisons.

use drivelab_report::metrics::{push, read_lenient, short, Metric};
use serde_json::Value;

use crate::session::{AuditReport, SessionReport};
use crate::ReplayReport;

impl SessionReport {
    /// A replay's result as stored (any version's JSON): each field
    /// missing takes its default; a result that cannot be read is an empty
    /// one.
    pub fn from_stored(v: &Value) -> SessionReport {
        read_lenient(v).unwrap_or_default()
    }
}

impl AuditReport {
    /// An audit's result as stored, read as [`SessionReport::from_stored`]
    /// reads a replay.
    pub fn from_stored(v: &Value) -> AuditReport {
        read_lenient(v).unwrap_or_default()
    }
}

/// A replay's figures: IOPS, duration and service times.
pub fn metrics(r: &ReplayReport) -> Vec<Metric> {
    let mut out = Vec::new();
    push(&mut out, "IOPS".into(), "IOPS", Some(r.score.iops), true);
    let secs = Some(r.duration_s);
    push(&mut out, "duration".into(), "s", secs, false);
    let st = &r.service_time_ns;
    for (ns, label) in [
        (st.mean, "mean"),
        (st.p50 as f64, "p50"),
        (st.p99 as f64, "p99"),
        (st.p999 as f64, "p99.9"),
    ] {
        let us = Some(ns / 1e3);
        push(&mut out, format!("{label} service time"), "µs", us, false);
    }
    out
}

/// IOPS, bytes, duration and errors of a replay.
pub fn headline(r: &ReplayReport) -> String {
    format!(
        "{} IOPS, {} B over {} s, {} errors",
        short(r.score.iops),
        short((r.bytes_read + r.bytes_written) as f64),
        short(r.duration_s),
        r.errors
    )
}

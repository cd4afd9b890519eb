//! A stored erase result read back into [`Summary`], and the figures
//! `drivelab compare` sets side by side and the one line `drivelab history`
//! shows of it. They are defined here, beside the struct they read, so
//! that a renamed field is a compile error rather than a figure that
//! silently drops out of comparisons.

use drivelab_report::metrics::{push, read_lenient, short, Metric};
use serde_json::Value;

use crate::outcome::Summary;

impl Summary {
    /// An erase's result as stored (any version's JSON): each field
    /// missing takes its default; a result that cannot be read is an empty
    /// one.
    pub fn from_stored(v: &Value) -> Summary {
        read_lenient(v).unwrap_or_default()
    }
}

/// An erase's figures: erase time, rate and verify time per drive, then
/// the whole erase's time and rate.
pub fn metrics(r: &Summary) -> Vec<Metric> {
    let mut out = Vec::new();
    for d in &r.drives {
        let dev = if d.device.is_empty() {
            "drive"
        } else {
            d.device.as_str()
        };
        let secs = d.erase_seconds;
        push(
            &mut out,
            format!("{dev} erase time"),
            "s",
            Some(secs),
            false,
        );
        let rate = (secs > 0.0).then(|| d.bytes as f64 / secs / 1e6);
        push(&mut out, format!("{dev} erase rate"), "MB/s", rate, true);
        let verify = Some(d.verify_seconds);
        push(&mut out, format!("{dev} verify time"), "s", verify, false);
    }
    let secs = Some(r.complete_seconds);
    push(&mut out, "complete time".into(), "s", secs, false);
    let rate = Some(r.aggregate_mb_per_s);
    push(&mut out, "aggregate rate".into(), "MB/s", rate, true);
    out
}

/// Drives, bytes, time and aggregate rate.
pub fn headline(r: &Summary) -> String {
    format!(
        "{} drive(s), {} B in {} s, {} MB/s",
        r.drives.len(),
        short(r.total_bytes as f64),
        short(r.complete_seconds),
        short(r.aggregate_mb_per_s)
    )
}

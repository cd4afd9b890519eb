//! A stored season result read back into [`SeasonReport`], and the
//! figures `drivelab compare` sets side by side and the one line `drivelab
//! history` shows of it. They are defined here, beside the struct they
//! read, so that a renamed field is a compile error rather than a figure
//! that silently drops out of comparisons.

use drivelab_report::metrics::{push, read_lenient, short, Metric};
use serde_json::Value;

use crate::result::{DriveSeason, SeasonReport};

impl SeasonReport {
    /// A season's result as stored (any version's JSON): each field
    /// missing takes its default; a result that cannot be read is an empty
    /// one.
    pub fn from_stored(v: &Value) -> SeasonReport {
        read_lenient(v).unwrap_or_default()
    }

    /// Bytes the season wrote: every drive's fill passes, image and rounds.
    pub fn bytes_written(&self) -> u64 {
        self.drives.iter().map(DriveSeason::bytes_written).sum()
    }
}

impl DriveSeason {
    /// Bytes written to this drive: its fill passes, image and rounds.
    pub fn bytes_written(&self) -> u64 {
        let fill: u64 = self
            .fill
            .iter()
            .flat_map(|f| &f.pass_results)
            .map(|p| p.bytes)
            .sum();
        let image = self.image.as_ref().map_or(0, |i| i.bytes);
        let rounds: u64 = self.rounds.iter().map(|r| r.bytes_written).sum();
        fill + image + rounds
    }

    /// The drive's name in figures: its device, "drive" when none is known.
    fn label(&self) -> &str {
        if self.identity.device.is_empty() {
            "drive"
        } else {
            &self.identity.device
        }
    }
}

/// A season's figures: each drive's fill pass rates and last round's
/// IOPS, then the whole season's time.
pub fn metrics(r: &SeasonReport) -> Vec<Metric> {
    let mut out = Vec::new();
    for d in &r.drives {
        let dev = d.label();
        for p in d.fill.iter().flat_map(|f| &f.pass_results) {
            let rate = Some(p.bw_bytes / 1e6);
            let name = format!("{dev} fill pass {} rate", p.pass);
            push(&mut out, name, "MB/s", rate, true);
        }
        let iops = d.rounds.last().map(|r| r.metrics.iops);
        push(
            &mut out,
            format!("{dev} last round IOPS"),
            "IOPS",
            iops,
            true,
        );
    }
    let secs = Some(r.complete_seconds);
    push(&mut out, "complete time".into(), "s", secs, false);
    out
}

/// Drives, bytes written, time and rate.
pub fn headline(r: &SeasonReport) -> String {
    let bytes = r.bytes_written() as f64;
    let secs = r.complete_seconds;
    let rate = if secs > 0.0 { bytes / secs / 1e6 } else { 0.0 };
    format!(
        "{} drive(s), {} B in {} s, {} MB/s",
        r.drives.len(),
        short(bytes),
        short(secs),
        short(rate)
    )
}

//! The one result of `drivelab season`: every drive with its identity, each
//! stage's outcome, every round and the steady-state verdict, the fresh vs
//! used comparison and the whole-drive write series with its cliff.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use crate::cliff::Cliff;
use crate::steady::Verdict;

/// The whole run.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct SeasonReport {
    /// Tool version.
    pub version: String,
    /// The stages asked for, in order.
    pub stages: Vec<String>,
    /// Each drive.
    pub drives: Vec<DriveSeason>,
    /// Seconds from the first drive's start to the last drive's end.
    pub complete_seconds: f64,
}

impl SeasonReport {
    /// Whether every drive finished every stage asked for.
    pub fn all_done(&self) -> bool {
        self.drives.iter().all(|d| d.state == State::Done)
    }
}

/// How a drive's season ended.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum State {
    /// Every stage asked for ran.
    Done,
    /// Ctrl-C: the journal holds the progress (`--resume`).
    Stopped,
    /// A stage failed (see `error`); what a stored drive that names no
    /// state reads as.
    #[default]
    Failed,
}

impl State {
    /// The word the result JSON holds ("done", "stopped", "failed").
    pub fn as_str(self) -> &'static str {
        match self {
            State::Done => "done",
            State::Stopped => "stopped",
            State::Failed => "failed",
        }
    }
}

/// The drive's identity, kept with its results.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Identity {
    /// Device node.
    pub device: String,
    /// Model.
    pub model: Option<String>,
    /// Serial.
    pub serial: Option<String>,
    /// Firmware revision.
    pub firmware: Option<String>,
    /// Capacity, bytes.
    pub capacity_bytes: u64,
    /// Logical block size, bytes.
    pub logical_block: u32,
    /// Transport as probed ("nvme", "scsi", "ata-via-sat", "other").
    pub transport: String,
}

/// One drive's season.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct DriveSeason {
    /// Who the drive is.
    pub identity: Identity,
    /// How it ended.
    pub state: State,
    /// The error, when failed or stopped.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// The drive was purged by this season: the measurements after it are
    /// of a fresh drive. False: "not purged: ..." in `purge.result`.
    pub fresh: bool,
    /// This run continued an interrupted one (`--resume`).
    pub resumed: bool,
    /// The purge stage.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub purge: Option<Purge>,
    /// The sequential fill stage.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fill: Option<Fill>,
    /// The whole-drive write series (the first fill pass, right after the
    /// purge) and its cliff.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[serde(deserialize_with = "drivelab_report::metrics::or_default")]
    pub write_series: Option<WriteSeries>,
    /// The image restore stage.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub image: Option<Image>,
    /// The workload of the rounds.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub workload: Option<String>,
    /// Every round, in order (earlier runs' too, on resume).
    pub rounds: Vec<Round>,
    /// The PTS steady-state verdict over the rounds.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[serde(deserialize_with = "drivelab_report::metrics::or_default")]
    pub steady_state: Option<Verdict>,
    /// Fresh vs used.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub compare: Option<Compare>,
    /// The journal (kept while the season is unfinished).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub journal: Option<PathBuf>,
    /// Plot files written.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub plots: Vec<PathBuf>,
    /// The write claim: safety assessment, consent, hold.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[serde(deserialize_with = "drivelab_report::metrics::or_default")]
    pub claim: Option<drivelab_device::claim::ClaimRecord>,
    /// The drive's health before and after this season, and what changed
    /// (drives with health of their own).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[serde(deserialize_with = "drivelab_report::metrics::or_default")]
    pub health: Option<drivelab_device::health::around::AroundWork>,
}

/// The purge stage.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Purge {
    /// The method used ("nvme-sanitize", "nvme-format", "ata-sanitize",
    /// "discard"), None when the drive could not be purged.
    pub method: Option<String>,
    /// What was done, or "not purged: <why>".
    pub result: String,
    /// Why this method (what the drive offers).
    pub reason: String,
    /// Every purge method considered, with "yes" or why not.
    pub methods: Vec<(String, String)>,
    /// Seconds.
    pub seconds: f64,
    /// The erase certificate of a sanitize or format.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub certificate: Option<PathBuf>,
}

/// The sequential fill stage.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Fill {
    /// Passes asked for.
    pub passes: u32,
    /// Transfer length, bytes (128 KiB).
    pub transfer_bytes: u32,
    /// Queue depth (32).
    pub queue_depth: u32,
    /// Each pass done.
    pub pass_results: Vec<Pass>,
}

/// One sequential pass over the drive (fill or image).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Pass {
    /// Pass number (1-based).
    pub pass: u32,
    /// Byte this run started at (0, or where an interrupted run stopped).
    pub start_offset: u64,
    /// Bytes written by this run.
    pub bytes: u64,
    /// Seconds.
    pub seconds: f64,
    /// Mean throughput, bytes/s.
    pub bw_bytes: f64,
}

/// One point of the whole-drive write series.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct WritePoint {
    /// Bytes written at the end of the bucket (its position on the drive).
    pub written_bytes: u64,
    /// Throughput over the bucket, bytes/s.
    pub bw_bytes: f64,
}

/// The whole-drive write series.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct WriteSeries {
    /// Bucket size, bytes (1 GiB, or 1 % of a drive under 100 GiB): the
    /// least a point holds; a point also spans at least 10 ms, so on a
    /// fast drive it holds several buckets.
    pub bucket_bytes: u64,
    /// The points.
    pub points: Vec<WritePoint>,
    /// The cliff, when throughput falls below 60 % of the initial plateau
    /// and stays there.
    pub cliff: Option<CliffAt>,
    /// The series started after an interruption, not at byte 0.
    pub partial: bool,
}

/// Where the cliff is.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CliffAt {
    /// Bytes written before throughput fell.
    pub at_bytes: u64,
    /// Of the capacity, percent.
    pub at_pct: f64,
    /// The detector's figures.
    #[serde(flatten)]
    pub detector: Cliff,
}

/// The image restore stage.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Image {
    /// The image or trace file.
    pub source: PathBuf,
    /// "image" (sector by sector) or "trace" (its writes replayed).
    pub kind: String,
    /// Bytes written.
    pub bytes: u64,
    /// Seconds.
    pub seconds: f64,
    /// Writes issued (trace) or commands (image).
    pub writes: u64,
}

/// What one workload run measured.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Metrics {
    /// I/O per second (all directions).
    pub iops: f64,
    /// Bytes per second (all directions).
    pub bw_bytes: f64,
    /// Mean latency, ns.
    pub lat_mean_ns: f64,
    /// 99th percentile latency, ns.
    pub lat_p99_ns: f64,
    /// Measured seconds.
    pub seconds: f64,
}

/// One round of the workload.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Round {
    /// Round number (1-based).
    pub round: usize,
    /// What it measured.
    #[serde(flatten)]
    pub metrics: Metrics,
    /// Bytes written.
    pub bytes_written: u64,
}

/// Fresh vs used.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Compare {
    /// The workload.
    pub workload: String,
    /// Right after the purge (None when not run yet).
    pub fresh: Option<Metrics>,
    /// After seasoning.
    pub used: Option<Metrics>,
    /// Per metric: (name, fresh, used, change %), when both ran.
    pub change: Vec<Change>,
}

/// One metric, fresh vs used.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Change {
    /// "iops", "bw_bytes", "lat_mean_ns", "lat_p99_ns".
    pub metric: String,
    /// Fresh.
    pub fresh: f64,
    /// Used.
    pub used: f64,
    /// (used − fresh) / fresh, percent.
    pub change_pct: f64,
}

impl Compare {
    /// Fill in the per-metric change once both sides ran.
    pub fn settle(&mut self) {
        self.change.clear();
        let (Some(f), Some(u)) = (self.fresh, self.used) else {
            return;
        };
        for (name, a, b) in [
            ("iops", f.iops, u.iops),
            ("bw_bytes", f.bw_bytes, u.bw_bytes),
            ("lat_mean_ns", f.lat_mean_ns, u.lat_mean_ns),
            ("lat_p99_ns", f.lat_p99_ns, u.lat_p99_ns),
        ] {
            self.change.push(Change {
                metric: name.into(),
                fresh: a,
                used: b,
                change_pct: if a > 0.0 { (b - a) / a * 100.0 } else { 0.0 },
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m(iops: f64, lat: f64) -> Metrics {
        Metrics {
            iops,
            bw_bytes: iops * 4096.0,
            lat_mean_ns: lat,
            lat_p99_ns: lat * 3.0,
            seconds: 1.0,
        }
    }

    #[test]
    fn change_is_relative_to_fresh() {
        let mut c = Compare {
            workload: "x".into(),
            fresh: Some(m(1000.0, 100.0)),
            used: Some(m(780.0, 130.0)),
            change: vec![],
        };
        c.settle();
        assert_eq!(c.change.len(), 4);
        assert!((c.change[0].change_pct + 22.0).abs() < 1e-9);
        assert!((c.change[2].change_pct - 30.0).abs() < 1e-9);
        c.used = None;
        c.settle();
        assert!(c.change.is_empty());
    }
}

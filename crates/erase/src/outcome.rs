//! What an erase reports: each drive's [`Outcome`] (a row of the table and
//! of the JSON report), the run's [`Summary`], and the [`Report`] the
//! command line prints. The JSON field names are the report's; the result
//! is an [`EraseResult`], serialised as the words the certificate uses.

use std::borrow::Cow;
use std::fmt;
use std::path::PathBuf;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::plan::estimate::DryRun;
use crate::plan::{Drive, Method, Strategy, VerifyMode};
use drivelab_device::health::around::AroundWork;

/// The result of one drive's erase, as the report and the certificate say
/// it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum EraseResult {
    /// Every block written and the read-back passed (or, for a
    /// cryptographic erase, cannot apply).
    #[serde(rename = "erased")]
    Erased,
    /// Erased, except ranges that failed after retries (listed).
    #[serde(rename = "erased with exceptions")]
    ErasedWithExceptions,
    /// Every block written (`--verify none`): nothing read back, so not
    /// certified as erased.
    #[serde(rename = "overwritten, not verified")]
    OverwrittenNotVerified,
    /// Written except listed ranges, nothing read back.
    #[serde(rename = "overwritten with exceptions, not verified")]
    OverwrittenWithExceptionsNotVerified,
    /// A format or sanitize command completed (`--verify none`): nothing
    /// read back.
    #[serde(rename = "sanitized, not verified")]
    SanitizedNotVerified,
    /// The erase or its verification failed (and what a stored outcome
    /// that names no result reads as).
    #[serde(rename = "failed")]
    #[default]
    Failed,
    /// Stopped (Ctrl-C); the journal is kept for `--resume`.
    #[serde(rename = "stopped")]
    Stopped,
}

impl EraseResult {
    /// The words ("erased", "overwritten, not verified", ...).
    pub fn as_str(self) -> &'static str {
        match self {
            EraseResult::Erased => "erased",
            EraseResult::ErasedWithExceptions => "erased with exceptions",
            EraseResult::OverwrittenNotVerified => "overwritten, not verified",
            EraseResult::OverwrittenWithExceptionsNotVerified => {
                "overwritten with exceptions, not verified"
            }
            EraseResult::SanitizedNotVerified => "sanitized, not verified",
            EraseResult::Failed => "failed",
            EraseResult::Stopped => "stopped",
        }
    }

    /// Whether the drive did everything asked without exceptions (exit
    /// status 0 when every drive did).
    pub fn is_clean(self) -> bool {
        matches!(
            self,
            EraseResult::Erased
                | EraseResult::OverwrittenNotVerified
                | EraseResult::SanitizedNotVerified
        )
    }

    /// The result of a finished erase: `failed` when a failure was found;
    /// else, when verification ran (`read_back`: any mode but `--verify
    /// none`), erased with or without exceptions; else what was done, "not
    /// verified" (a format or sanitize "sanitized", anything else
    /// "overwritten").
    pub fn finished(failed: bool, exceptions: bool, read_back: bool, method: Method) -> Self {
        match (failed, read_back, exceptions) {
            (true, _, _) => EraseResult::Failed,
            (false, true, false) => EraseResult::Erased,
            (false, true, true) => EraseResult::ErasedWithExceptions,
            (false, false, false) if method.whole_device() => EraseResult::SanitizedNotVerified,
            (false, false, false) => EraseResult::OverwrittenNotVerified,
            (false, false, true) => EraseResult::OverwrittenWithExceptionsNotVerified,
        }
    }
}

impl fmt::Display for EraseResult {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The stream's final setting.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Tuning {
    /// Transfer length, bytes.
    pub transfer: u64,
    /// Queue depth.
    pub depth: u32,
    /// How many times tuning changed the setting.
    pub changes: u32,
}

/// What happened to one drive.
#[derive(Debug, Clone, Default)]
pub struct Outcome {
    /// Device node.
    pub device: String,
    /// Serial.
    pub serial: Option<String>,
    /// Model, as the kernel named the drive when it was planned: the
    /// stored record keeps it when the drive is gone by the time it is
    /// stored (pulled from a station).
    pub model: Option<String>,
    /// Capacity, bytes, when it was planned (what the erase covers).
    pub capacity_bytes: Option<u64>,
    /// Method used.
    pub method: Method,
    /// Why that method.
    pub reason: String,
    /// The result.
    pub result: EraseResult,
    /// The error, when failed or stopped.
    pub error: Option<String>,
    /// Bytes covered by this run (all passes).
    pub bytes: u64,
    /// Bytes covered by earlier runs (journal).
    pub resumed_bytes: u64,
    /// Seconds of the erase phase.
    pub erase_seconds: f64,
    /// Seconds of verification.
    pub verify_seconds: f64,
    /// Verification result in words.
    pub verification: String,
    /// Whether BLKZEROOUT was offloaded (zeroout).
    pub offloaded: Option<bool>,
    /// The stream's final transfer length and depth, and how many times
    /// tuning changed them.
    pub tuning: Option<Tuning>,
    /// Stream only: seconds from the first write submitted to the last
    /// completed (no ring or buffer setup, no final flush), as fio counts.
    pub stream_io_seconds: Option<f64>,
    /// Skipped ranges.
    pub exceptions: usize,
    /// The JSON certificate.
    pub certificate: Option<PathBuf>,
    /// The HTML page.
    pub html: Option<PathBuf>,
    /// The PDF certificate (`--certificate-format pdf`), made by the
    /// command line from the JSON.
    pub pdf: Option<PathBuf>,
    /// The journal kept for `--resume`, when stopped or failed mid-erase.
    pub journal: Option<PathBuf>,
    /// The drive's write claim: the safety assessment made before the
    /// first write, the confirmed serial, and how it was held.
    pub claim: Option<drivelab_device::claim::ClaimRecord>,
    /// Bytes done against time, sampled while the drive ran (see
    /// [`crate::sched::record_timeline`]); empty until then.
    pub timeline: Vec<TimelinePoint>,
    /// The drive's health before and after its erase, what changed, and
    /// whether its write counter corroborates the overwrite (`None` for
    /// devices without health of their own: loop, zram, ...).
    pub health: Option<AroundWork>,
    /// The capacity restored before the erase (`--restore-native-max`).
    pub restored: Option<crate::plan::Restored>,
}

/// One sample of a drive's progress.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct TimelinePoint {
    /// Seconds since the erase started (all drives share the origin).
    pub t_s: f64,
    /// The phase: "erasing", "verifying", "done", "FAILED", "stopped".
    pub phase: Cow<'static, str>,
    /// Bytes of the phase done (erase: all passes; verify: read back).
    pub done_bytes: u64,
    /// Bytes of the phase in total.
    pub total_bytes: u64,
}

impl Outcome {
    /// A drive that has not got anywhere yet (failed until it does).
    pub fn new(d: &Drive) -> Outcome {
        Outcome {
            device: d.dev.path.display().to_string(),
            serial: d.serial().map(String::from),
            model: d.dev.model.clone(),
            capacity_bytes: Some(d.size),
            method: d.choice.method,
            reason: d.choice.reason.clone(),
            result: EraseResult::Failed,
            error: None,
            bytes: 0,
            resumed_bytes: 0,
            erase_seconds: 0.0,
            verify_seconds: 0.0,
            verification: "not performed".into(),
            offloaded: (d.choice.method == Method::Zeroout).then_some(d.offers.zeroout_offload),
            tuning: None,
            stream_io_seconds: None,
            exceptions: 0,
            certificate: None,
            html: None,
            pdf: None,
            journal: None,
            claim: None,
            timeline: Vec::new(),
            health: None,
            restored: d.restored.clone(),
        }
    }

    /// MB/s (10^6) of this run's erase.
    pub fn mb_per_s(&self) -> f64 {
        if self.erase_seconds > 0.0 {
            self.bytes as f64 / self.erase_seconds / 1e6
        } else {
            0.0
        }
    }
}

/// The JSON row of an outcome (field names of the report).
#[derive(Serialize)]
struct Row<'a> {
    device: &'a str,
    serial: &'a Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    model: &'a Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    capacity_bytes: Option<u64>,
    method: Method,
    method_reason: &'a str,
    result: EraseResult,
    error: &'a Option<String>,
    bytes: u64,
    resumed_bytes: u64,
    erase_seconds: f64,
    verify_seconds: f64,
    mb_per_s: f64,
    verification: &'a str,
    offloaded: Option<bool>,
    stream_transfer_bytes: Option<u64>,
    stream_queue_depth: Option<u32>,
    stream_tuning_changes: Option<u32>,
    stream_io_seconds: Option<f64>,
    exceptions: usize,
    certificate: &'a Option<PathBuf>,
    html: &'a Option<PathBuf>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pdf: &'a Option<PathBuf>,
    journal: &'a Option<PathBuf>,
    #[serde(skip_serializing_if = "Option::is_none")]
    claim: &'a Option<drivelab_device::claim::ClaimRecord>,
    #[serde(skip_serializing_if = "<[_]>::is_empty")]
    timeline: &'a [TimelinePoint],
    #[serde(skip_serializing_if = "Option::is_none")]
    health: &'a Option<AroundWork>,
    #[serde(skip_serializing_if = "Option::is_none")]
    capacity_restored: &'a Option<crate::plan::Restored>,
}

impl Serialize for Outcome {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        Row {
            device: &self.device,
            serial: &self.serial,
            model: &self.model,
            capacity_bytes: self.capacity_bytes,
            method: self.method,
            method_reason: &self.reason,
            result: self.result,
            error: &self.error,
            bytes: self.bytes,
            resumed_bytes: self.resumed_bytes,
            erase_seconds: self.erase_seconds,
            verify_seconds: self.verify_seconds,
            mb_per_s: self.mb_per_s(),
            verification: &self.verification,
            offloaded: self.offloaded,
            stream_transfer_bytes: self.tuning.map(|t| t.transfer),
            stream_queue_depth: self.tuning.map(|t| t.depth),
            stream_tuning_changes: self.tuning.map(|t| t.changes),
            stream_io_seconds: self.stream_io_seconds,
            exceptions: self.exceptions,
            certificate: &self.certificate,
            html: &self.html,
            pdf: &self.pdf,
            journal: &self.journal,
            claim: &self.claim,
            timeline: &self.timeline,
            health: &self.health,
            capacity_restored: &self.restored,
        }
        .serialize(s)
    }
}

/// An outcome as stored: the fields of [`Row`], owned, each missing one
/// taking its default (a result written by an older version still reads).
#[derive(Deserialize, Default)]
#[serde(default)]
struct StoredRow {
    device: String,
    serial: Option<String>,
    model: Option<String>,
    capacity_bytes: Option<u64>,
    method: Method,
    method_reason: String,
    result: EraseResult,
    error: Option<String>,
    bytes: u64,
    resumed_bytes: u64,
    erase_seconds: f64,
    verify_seconds: f64,
    verification: String,
    offloaded: Option<bool>,
    stream_transfer_bytes: Option<u64>,
    stream_queue_depth: Option<u32>,
    stream_tuning_changes: Option<u32>,
    stream_io_seconds: Option<f64>,
    exceptions: usize,
    certificate: Option<PathBuf>,
    html: Option<PathBuf>,
    pdf: Option<PathBuf>,
    journal: Option<PathBuf>,
    #[serde(deserialize_with = "drivelab_report::metrics::or_default")]
    claim: Option<drivelab_device::claim::ClaimRecord>,
    timeline: Vec<TimelinePoint>,
    #[serde(deserialize_with = "drivelab_report::metrics::or_default")]
    health: Option<AroundWork>,
    #[serde(deserialize_with = "drivelab_report::metrics::or_default")]
    capacity_restored: Option<crate::plan::Restored>,
}

impl<'de> Deserialize<'de> for Outcome {
    /// The outcome [`Serialize`] wrote (`mb_per_s` is derived, so not read
    /// back; the tuning is read when all three of its fields are there).
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let r = StoredRow::deserialize(d)?;
        let tuning = match (
            r.stream_transfer_bytes,
            r.stream_queue_depth,
            r.stream_tuning_changes,
        ) {
            (Some(transfer), Some(depth), Some(changes)) => Some(Tuning {
                transfer,
                depth,
                changes,
            }),
            _ => None,
        };
        Ok(Outcome {
            device: r.device,
            serial: r.serial,
            model: r.model,
            capacity_bytes: r.capacity_bytes,
            method: r.method,
            reason: r.method_reason,
            result: r.result,
            error: r.error,
            bytes: r.bytes,
            resumed_bytes: r.resumed_bytes,
            erase_seconds: r.erase_seconds,
            verify_seconds: r.verify_seconds,
            verification: r.verification,
            offloaded: r.offloaded,
            tuning,
            stream_io_seconds: r.stream_io_seconds,
            exceptions: r.exceptions,
            certificate: r.certificate,
            html: r.html,
            pdf: r.pdf,
            journal: r.journal,
            claim: r.claim,
            timeline: r.timeline,
            health: r.health,
            restored: r.capacity_restored,
        })
    }
}

/// A finished erase of every drive.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct Summary {
    /// Strategy.
    pub strategy: Strategy,
    /// Pattern name.
    pub pattern: String,
    /// Verification mode.
    pub verify: VerifyMode,
    /// Aggregate bus limit, bytes/s.
    pub bus_limit_bytes_per_s: Option<u64>,
    /// One outcome per drive, in the order named.
    pub drives: Vec<Outcome>,
    /// Seconds from the first drive's start to the last drive's end.
    pub complete_seconds: f64,
    /// Bytes written by this run over all drives.
    pub total_bytes: u64,
    /// total_bytes / complete_seconds, MB/s (10^6).
    pub aggregate_mb_per_s: f64,
}

impl Summary {
    /// Whether every drive did everything asked without exceptions.
    pub fn all_clean(&self) -> bool {
        self.drives.iter().all(|o| o.result.is_clean())
    }
}

/// What `drivelab erase` reports.
#[derive(Debug, Clone)]
pub enum Report {
    /// `--dry-run`: the plan and estimates, nothing written.
    DryRun(DryRun),
    /// The drives were erased (or tried to be).
    Erased(Summary),
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn results_serialise_as_their_words() {
        for r in [
            EraseResult::Erased,
            EraseResult::ErasedWithExceptions,
            EraseResult::OverwrittenNotVerified,
            EraseResult::OverwrittenWithExceptionsNotVerified,
            EraseResult::SanitizedNotVerified,
            EraseResult::Failed,
            EraseResult::Stopped,
        ] {
            let v = serde_json::to_value(r).unwrap();
            assert_eq!(v, r.as_str());
            assert_eq!(serde_json::from_value::<EraseResult>(v).unwrap(), r);
        }
    }

    /// A drive pulled from a station is gone when its result is stored:
    /// the outcome itself carries what the erase saw of it.
    #[test]
    fn a_stored_outcome_keeps_the_model_and_capacity_the_erase_saw() {
        let o = Outcome {
            device: "/dev/sdc".into(),
            serial: Some("S1".into()),
            model: Some("QEMU HARDDISK".into()),
            capacity_bytes: Some(64 << 20),
            result: EraseResult::Stopped,
            ..Default::default()
        };
        let v = serde_json::to_value(&o).unwrap();
        assert_eq!(v["model"], "QEMU HARDDISK");
        assert_eq!(v["capacity_bytes"], 64 << 20);
        let back: Outcome = serde_json::from_value(v).unwrap();
        assert_eq!(back.model.as_deref(), Some("QEMU HARDDISK"));
        assert_eq!(back.capacity_bytes, Some(64 << 20));
        // A result stored before the fields existed still reads.
        let old: Outcome =
            serde_json::from_value(serde_json::json!({"device": "/dev/sdc"})).unwrap();
        assert_eq!((old.model, old.capacity_bytes), (None, None));
    }

    #[test]
    fn an_erase_without_read_back_is_never_erased() {
        use EraseResult::*;
        for m in [Method::Stream, Method::Zeroout, Method::Discard] {
            assert_eq!(
                EraseResult::finished(false, false, false, m),
                OverwrittenNotVerified
            );
            assert_eq!(
                EraseResult::finished(false, true, false, m),
                OverwrittenWithExceptionsNotVerified
            );
        }
        assert_eq!(
            EraseResult::finished(false, false, false, Method::NvmeFormat),
            SanitizedNotVerified
        );
        assert_eq!(
            EraseResult::finished(false, false, true, Method::Stream),
            Erased
        );
        assert_eq!(
            EraseResult::finished(false, true, true, Method::Stream),
            ErasedWithExceptions
        );
        assert_eq!(
            EraseResult::finished(true, false, true, Method::Stream),
            Failed
        );
        assert!(OverwrittenNotVerified.is_clean() && !ErasedWithExceptions.is_clean());
    }
}

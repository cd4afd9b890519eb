//! One drive's state as the screen and the events show it ([`View`]), the
//! states of its machine ([`State`]), and the operator's controls a worker
//! obeys ([`Control`]). A leaf: the worker, the station and the screen all
//! read these types.
//!
//! ```text
//! detected -> identified -> triage -> erasing -> verifying -> certified
//!                 |            |         |           |
//!                 v            v         v           v
//!              outside       held     removed / aborted / failed
//! ```

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};

use serde::Serialize;

/// Where a drive is in its machine.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum State {
    /// Seen (present at start, or arrived).
    Detected,
    /// Model, serial, size and bay known.
    Identified,
    /// In no bay, or filtered out: shown, never touched.
    Outside,
    /// Health is being read and graded.
    Triage,
    /// Waiting for the operator (content on it, a failing grade, a hold).
    Held,
    /// Being erased.
    Erasing,
    /// Being read back.
    Verifying,
    /// Erased, verified and certified.
    Certified,
    /// The erase or the certificate failed, or the drive was refused.
    Failed,
    /// Pulled before it was certified: not erased.
    Removed,
    /// Stopped by the operator: not erased (its journal is kept).
    Aborted,
}

impl State {
    /// Every state, in the order of the machine.
    pub const ALL: [State; 11] = [
        State::Detected,
        State::Identified,
        State::Outside,
        State::Triage,
        State::Held,
        State::Erasing,
        State::Verifying,
        State::Certified,
        State::Failed,
        State::Removed,
        State::Aborted,
    ];

    /// The word shown.
    pub fn word(self) -> &'static str {
        match self {
            State::Detected => "detected",
            State::Identified => "identified",
            State::Outside => "outside",
            State::Triage => "triage",
            State::Held => "held",
            State::Erasing => "erasing",
            State::Verifying => "verifying",
            State::Certified => "certified",
            State::Failed => "failed",
            State::Removed => "removed",
            State::Aborted => "aborted",
        }
    }

    /// Whether the drive's worker is done with it.
    pub fn is_final(self) -> bool {
        matches!(
            self,
            State::Outside | State::Certified | State::Failed | State::Removed | State::Aborted
        )
    }

    /// Whether the drive is being written or read back.
    pub fn is_busy(self) -> bool {
        matches!(self, State::Erasing | State::Verifying)
    }
}

/// The grade triage gave.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Grade {
    /// "pass", "fail", or "n/a" (the drive reports no health).
    pub grade: String,
    /// Each threshold exceeded, or why there is no grade.
    pub reasons: Vec<String>,
}

/// Everything shown about one drive.
#[derive(Debug, Clone, Serialize)]
pub struct View {
    /// Kernel name (`sdb`, `loop3`).
    pub name: String,
    /// Device node.
    pub device: PathBuf,
    /// The bay (the by-path name a bay pattern matched), None outside.
    pub bay: Option<String>,
    /// Model.
    pub model: Option<String>,
    /// Serial.
    pub serial: Option<String>,
    /// Size, bytes.
    pub size: u64,
    /// Transport (sata, sas, scsi, nvme, usb, virtio, mmc, loop, other).
    pub transport: String,
    /// Asset tag, by the policy's source.
    pub asset_tag: Option<String>,
    /// Triage's grade.
    pub grade: Option<Grade>,
    /// State.
    pub state: State,
    /// A line about the state ("holds an ext4 filesystem: confirm to erase").
    pub detail: String,
    /// Erase or verify progress, 0 to 100.
    pub progress_pct: f64,
    /// Bytes of the current phase done.
    pub bytes_done: u64,
    /// Bytes of the current phase in all.
    pub bytes_total: u64,
    /// Current speed, bytes per second.
    pub speed_bytes_per_s: f64,
    /// Estimated seconds left in the current phase.
    pub eta_s: Option<f64>,
    /// Temperature, °C, when the drive reports one.
    pub temperature_c: Option<i64>,
    /// Its error counters and wear as triage read them (served as
    /// metrics; the events carry the grade).
    #[serde(skip)]
    pub health: Option<drivelab_metrics::model::health::DriveHealth>,
    /// The certificate (JSON), once certified.
    pub certificate: Option<PathBuf>,
    /// Its PDF, when the policy's certificate.formats holds pdf.
    pub pdf: Option<PathBuf>,
    /// The erase journal, while one is kept.
    pub journal: Option<PathBuf>,
}

impl View {
    /// A view of a drive just seen.
    pub fn detected(name: &str, device: PathBuf) -> View {
        View {
            name: name.to_string(),
            device,
            bay: None,
            model: None,
            serial: None,
            size: 0,
            transport: String::new(),
            asset_tag: None,
            grade: None,
            state: State::Detected,
            detail: String::new(),
            progress_pct: 0.0,
            bytes_done: 0,
            bytes_total: 0,
            speed_bytes_per_s: 0.0,
            eta_s: None,
            temperature_c: None,
            health: None,
            certificate: None,
            pdf: None,
            journal: None,
        }
    }
}

/// What the operator asked of a drive, read by its worker.
#[derive(Debug, Default)]
pub struct Control {
    /// Stop the erase now (set with one of the reasons below).
    pub stop: AtomicBool,
    /// The drive was pulled.
    pub removed: AtomicBool,
    /// Hold it (stop an erase; the journal is kept).
    pub hold: AtomicBool,
    /// Abort it (stop; not erased).
    pub abort: AtomicBool,
    /// Go on from held (resume, or confirm what held it).
    pub go: AtomicBool,
    /// The operator confirmed erasing the content or hidden area on it.
    pub confirmed: AtomicBool,
    /// The station is quitting.
    pub quit: AtomicBool,
}

impl Control {
    /// Set a flag and the stop flag.
    pub fn stop_for(&self, why: &AtomicBool) {
        why.store(true, Ordering::SeqCst);
        self.stop.store(true, Ordering::SeqCst);
    }

    /// Read a flag.
    pub fn is(flag: &AtomicBool) -> bool {
        flag.load(Ordering::SeqCst)
    }
}

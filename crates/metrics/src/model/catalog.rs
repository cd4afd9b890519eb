//! Every metric drivelab serves, declared once: name, type, unit, labels
//! and help. The model makes its families from these; `docs/metrics.md` is
//! [`table`] (a test holds the file to it). Names follow Prometheus's
//! conventions: a `drivelab_` prefix, base units (seconds, bytes, ratios
//! 0..1) named as the last word, counters written with `_total`.

/// A metric's type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// Only goes up while the work runs (a restart begins at zero).
    Counter,
    /// Any value, read now.
    Gauge,
    /// Cumulative buckets, `_count` and `_sum`.
    Histogram,
    /// Constant 1, its labels are the information (OpenMetrics `info`,
    /// a gauge named `…_info` in text 0.0.4).
    Info,
}

impl Kind {
    /// The word in a `# TYPE` line of OpenMetrics.
    pub fn openmetrics(self) -> &'static str {
        match self {
            Kind::Counter => "counter",
            Kind::Gauge => "gauge",
            Kind::Histogram => "histogram",
            Kind::Info => "info",
        }
    }

    /// The word in a `# TYPE` line of text 0.0.4.
    pub fn text004(self) -> &'static str {
        match self {
            Kind::Info => "gauge",
            k => k.openmetrics(),
        }
    }
}

/// One metric's declaration.
#[derive(Debug, PartialEq, Eq)]
pub struct Metric {
    /// The family's name (without `_total` / `_info`, which the samples add).
    pub name: &'static str,
    /// Its type.
    pub kind: Kind,
    /// Its unit (`seconds`, `bytes`, `ratio`, `celsius`), the name's last
    /// word; empty for a count.
    pub unit: &'static str,
    /// The labels of each sample, in order.
    pub labels: &'static [&'static str],
    /// One line on what it is.
    pub help: &'static str,
    /// Which commands serve it.
    pub from: &'static str,
}

impl Metric {
    /// The name of its samples (`_total` for a counter, `_info` for info).
    pub fn sample_name(&self) -> String {
        match self.kind {
            Kind::Counter => format!("{}_total", self.name),
            Kind::Info => format!("{}_info", self.name),
            _ => self.name.to_string(),
        }
    }
}

const JOB: &[&str] = &["jobname", "job_index", "direction"];
const DEVICE: &[&str] = &["device"];
const DRIVE: &[&str] = &["device", "serial"];
const PHASE: &[&str] = &["device", "serial", "phase"];
const BAY: &[&str] = &["device", "serial", "bay"];

/// drivelab itself.
pub static BUILD: Metric = Metric {
    name: "drivelab_build",
    kind: Kind::Info,
    unit: "",
    labels: &["version", "host", "command"],
    help: "drivelab's version, this host's name and the command serving the figures.",
    from: "run, test, erase, season, station, trace replay",
};
/// A target held for writing.
pub static CLAIM: Metric = Metric {
    name: "drivelab_claim",
    kind: Kind::Info,
    unit: "",
    labels: &["path", "device", "serial"],
    help:
        "A target claimed for writing: its path, kernel name and serial (empty when it has none).",
    from: "run, test, erase, season",
};
/// Whether the figures are final.
pub static FINISHED: Metric = Metric {
    name: "drivelab_work_finished",
    kind: Kind::Gauge,
    unit: "",
    labels: &[],
    help: "1 once the work has ended and the figures are the final result's, else 0.",
    from: "run, test, erase, season, trace replay",
};
/// I/Os completed.
pub static JOB_IOS: Metric = Metric {
    name: "drivelab_job_ios",
    kind: Kind::Counter,
    unit: "",
    labels: JOB,
    help: "I/Os completed by a job in one direction (read, write, trim): the result's total_ios.",
    from: "run",
};
/// Bytes moved.
pub static JOB_BYTES: Metric = Metric {
    name: "drivelab_job_io_bytes",
    kind: Kind::Counter,
    unit: "bytes",
    labels: JOB,
    help: "Bytes moved by a job in one direction: the result's io_bytes.",
    from: "run",
};
/// I/O errors.
pub static JOB_ERRORS: Metric = Metric {
    name: "drivelab_job_errors",
    kind: Kind::Counter,
    unit: "",
    labels: JOB,
    help: "Failed I/Os of a job in one direction (read, write, trim, fsync): the result's errors[] by op.",
    from: "run",
};
/// Completion latency.
pub static JOB_LATENCY: Metric = Metric {
    name: "drivelab_job_latency_seconds",
    kind: Kind::Histogram,
    unit: "seconds",
    labels: JOB,
    help: "Completion latency (fio's clat) from the run's own histogram; bounds 2^k-1 ns (k = 7..33), exact.",
    from: "run",
};
/// Runtime so far.
pub static JOB_RUNTIME: Metric = Metric {
    name: "drivelab_job_runtime_seconds",
    kind: Kind::Gauge,
    unit: "seconds",
    labels: &["jobname", "job_index"],
    help: "How long a job has run (fio's job_runtime).",
    from: "run",
};
/// Device reads per second.
pub static DEV_READ_IOPS: Metric = Metric {
    name: "drivelab_device_read_iops",
    kind: Kind::Gauge,
    unit: "",
    labels: DEVICE,
    help: "Reads per second the device completed in the last whole second (iostat's r/s, /proc/diskstats).",
    from: "run",
};
/// Device writes per second.
pub static DEV_WRITE_IOPS: Metric = Metric {
    name: "drivelab_device_write_iops",
    kind: Kind::Gauge,
    unit: "",
    labels: DEVICE,
    help: "Writes per second the device completed in the last whole second (iostat's w/s).",
    from: "run",
};
/// Device read throughput.
pub static DEV_READ_BPS: Metric = Metric {
    name: "drivelab_device_read_bytes_per_second",
    kind: Kind::Gauge,
    unit: "",
    labels: DEVICE,
    help: "Bytes per second read at the device in the last whole second (iostat's rkB/s x 1024).",
    from: "run",
};
/// Device write throughput.
pub static DEV_WRITE_BPS: Metric = Metric {
    name: "drivelab_device_write_bytes_per_second",
    kind: Kind::Gauge,
    unit: "",
    labels: DEVICE,
    help:
        "Bytes per second written at the device in the last whole second (iostat's wkB/s x 1024).",
    from: "run",
};
/// Device utilisation.
pub static DEV_UTIL: Metric = Metric {
    name: "drivelab_device_utilization_ratio",
    kind: Kind::Gauge,
    unit: "ratio",
    labels: DEVICE,
    help: "Share of the last whole second the device was busy, 0..1 (iostat's %util / 100).",
    from: "run",
};
/// Device queue depth.
pub static DEV_QUEUE: Metric = Metric {
    name: "drivelab_device_queue_depth",
    kind: Kind::Gauge,
    unit: "",
    labels: DEVICE,
    help: "Average requests queued at the device in the last whole second (iostat's aqu-sz).",
    from: "run",
};
/// Device bytes seen.
pub static DEV_BYTES: Metric = Metric {
    name: "drivelab_device_io_bytes",
    kind: Kind::Counter,
    unit: "bytes",
    labels: DEVICE,
    help: "Bytes the device moved since measuring began (/proc/diskstats; the device check's device_bytes).",
    from: "run",
};
/// Erase state.
pub static ERASE_STATE: Metric = Metric {
    name: "drivelab_erase_state",
    kind: Kind::Gauge,
    unit: "",
    labels: &["device", "serial", "state"],
    help: "1 for the drive's state (waiting, erasing, verifying, done, failed, stopped), 0 for the others.",
    from: "erase",
};
/// Erase bytes done.
pub static ERASE_DONE: Metric = Metric {
    name: "drivelab_erase_done_bytes",
    kind: Kind::Gauge,
    unit: "bytes",
    labels: PHASE,
    help:
        "Bytes done of a phase (erase: every pass; verify: read back), as the progress line shows.",
    from: "erase",
};
/// Erase bytes to do.
pub static ERASE_TOTAL: Metric = Metric {
    name: "drivelab_erase_planned_bytes",
    kind: Kind::Gauge,
    unit: "bytes",
    labels: PHASE,
    help: "Bytes a phase has to do in all.",
    from: "erase",
};
/// Erase progress ratio.
pub static ERASE_PROGRESS: Metric = Metric {
    name: "drivelab_erase_progress_ratio",
    kind: Kind::Gauge,
    unit: "ratio",
    labels: PHASE,
    help: "Share of a phase done, 0..1 (the progress line's percent / 100); verify's is the verification progress.",
    from: "erase",
};
/// Erase throughput.
pub static ERASE_THROUGHPUT: Metric = Metric {
    name: "drivelab_erase_throughput_bytes_per_second",
    kind: Kind::Gauge,
    unit: "",
    labels: PHASE,
    help: "Bytes per second of a phase (erasing, verifying) since it began; a finished drive keeps its last phase's.",
    from: "erase",
};
/// Erase ETA.
pub static ERASE_ETA: Metric = Metric {
    name: "drivelab_erase_eta_seconds",
    kind: Kind::Gauge,
    unit: "seconds",
    labels: PHASE,
    help: "Seconds a phase still needs at its throughput so far (0 once the drive finished; absent before a byte is done).",
    from: "erase",
};
/// Erase elapsed time.
pub static ERASE_ELAPSED: Metric = Metric {
    name: "drivelab_erase_elapsed_seconds",
    kind: Kind::Gauge,
    unit: "seconds",
    labels: DRIVE,
    help: "Seconds since the drive left waiting (its erase began), frozen when it finishes.",
    from: "erase",
};
/// Erase estimate.
pub static ERASE_ESTIMATE: Metric = Metric {
    name: "drivelab_erase_estimated_seconds",
    kind: Kind::Gauge,
    unit: "seconds",
    labels: DRIVE,
    help: "The plan's estimate of erase plus verify time (what --dry-run prints), for comparing with elapsed.",
    from: "erase",
};

/// A drive's temperature.
pub static DRIVE_TEMPERATURE: Metric = Metric {
    name: "drivelab_drive_temperature_celsius",
    kind: Kind::Gauge,
    unit: "celsius",
    labels: DEVICE,
    help: "The drive's temperature from the kernel's hwmon (drivetemp, nvme), read every 10 s; absent when the drive has none.",
    from: "erase",
};

/// A drive's health counter.
pub static DRIVE_HEALTH: Metric = Metric {
    name: "drivelab_drive_health_counter",
    kind: Kind::Gauge,
    unit: "",
    labels: &["device", "serial", "counter"],
    help: "A drive's own error counter as its last health reading gave it (ATA: reallocated_sectors, pending_sectors, offline_uncorrectable, reported_uncorrectable, crc_errors; NVMe: media_errors, error_log_entries; SCSI: read/write/verify_uncorrected). Read every minute while the host writes or verifies, never during a command the drive runs on its own (sanitize, security erase, format, a season's purge), and once at the end of an erase; a station's drives: as triage read them.",
    from: "erase, season, station",
};
/// A drive's wear.
pub static DRIVE_USED: Metric = Metric {
    name: "drivelab_drive_percentage_used_ratio",
    kind: Kind::Gauge,
    unit: "ratio",
    labels: DRIVE,
    help: "The drive's estimate of its life used (NVMe Percentage Used / 100; may exceed 1), as its last health reading gave it.",
    from: "erase, season, station",
};

/// A replay's requests in its trace.
pub static REPLAY_PLANNED: Metric = Metric {
    name: "drivelab_replay_planned_requests",
    kind: Kind::Gauge,
    unit: "",
    labels: &[],
    help: "Requests in the trace being replayed (its first pass counts them).",
    from: "trace replay",
};
/// A replay's requests issued.
pub static REPLAY_ISSUED: Metric = Metric {
    name: "drivelab_replay_issued_requests",
    kind: Kind::Counter,
    unit: "",
    labels: &[],
    help: "Requests the replay has issued: the result's requests.",
    from: "trace replay",
};
/// A replay's requests completed.
pub static REPLAY_COMPLETED: Metric = Metric {
    name: "drivelab_replay_completed_requests",
    kind: Kind::Counter,
    unit: "",
    labels: &[],
    help: "Requests completed without error: the result's completed.",
    from: "trace replay",
};
/// A replay's requests failed.
pub static REPLAY_FAILED: Metric = Metric {
    name: "drivelab_replay_failed_requests",
    kind: Kind::Counter,
    unit: "",
    labels: &[],
    help: "Requests that failed or moved fewer bytes than asked: the result's errors.",
    from: "trace replay",
};
/// A replay's bytes moved.
pub static REPLAY_BYTES: Metric = Metric {
    name: "drivelab_replay_io_bytes",
    kind: Kind::Counter,
    unit: "bytes",
    labels: &["direction"],
    help: "Bytes moved by completed requests (read, write): the result's bytes_read and bytes_written.",
    from: "trace replay",
};

/// The labels of a test step.
const STEP: &[&str] = &["step", "kind"];
/// A test step's state.
pub static TEST_STEP_STATE: Metric = Metric {
    name: "drivelab_test_step_state",
    kind: Kind::Gauge,
    unit: "",
    labels: &["step", "kind", "state"],
    help: "1 for the state a test step is in (waiting, running, passed, failed, skipped, interrupted), 0 for the others; step is its 1-based place in the sequence.",
    from: "test",
};
/// A test step's blocks done, in bytes.
pub static TEST_STEP_DONE: Metric = Metric {
    name: "drivelab_test_step_done_bytes",
    kind: Kind::Gauge,
    unit: "bytes",
    labels: STEP,
    help: "Bytes a test step has transferred so far, over its passes (a write-verify counts the write and the read), as the progress line counts them.",
    from: "test",
};
/// A test step's planned bytes.
pub static TEST_STEP_PLANNED: Metric = Metric {
    name: "drivelab_test_step_planned_bytes",
    kind: Kind::Gauge,
    unit: "bytes",
    labels: STEP,
    help: "Bytes a test step transfers when every command succeeds: its range once per pass.",
    from: "test",
};
/// Commands of a finished pass.
pub static TEST_IOS: Metric = Metric {
    name: "drivelab_test_ios",
    kind: Kind::Counter,
    unit: "",
    labels: &["step", "kind", "op"],
    help:
        "Commands a finished test step completed, by pass (write, read): the result's passes[].ios.",
    from: "test",
};
/// Bytes of a finished pass.
pub static TEST_BYTES: Metric = Metric {
    name: "drivelab_test_io_bytes",
    kind: Kind::Counter,
    unit: "bytes",
    labels: &["step", "kind", "op"],
    help: "Bytes a finished test step moved, by pass: the result's passes[].bytes.",
    from: "test",
};
/// Failed commands of a step.
pub static TEST_IO_ERRORS: Metric = Metric {
    name: "drivelab_test_io_errors",
    kind: Kind::Counter,
    unit: "",
    labels: STEP,
    help:
        "Commands of a finished test step that failed after their retries: the result's io_errors.",
    from: "test",
};
/// Miscompared blocks of a step.
pub static TEST_MISCOMPARES: Metric = Metric {
    name: "drivelab_test_miscompared_blocks",
    kind: Kind::Counter,
    unit: "",
    labels: STEP,
    help: "Blocks of a finished test step that read back different from the pattern: the result's miscompares.",
    from: "test",
};
/// Bad blocks of a step.
pub static TEST_BAD_BLOCKS: Metric = Metric {
    name: "drivelab_test_bad_blocks",
    kind: Kind::Counter,
    unit: "",
    labels: STEP,
    help: "Blocks of a finished test step found unreadable or unwritable by narrowing its failed commands: the result's bad_blocks.",
    from: "test",
};

/// A season's stage.
pub static SEASON_STAGE: Metric = Metric {
    name: "drivelab_season_stage",
    kind: Kind::Gauge,
    unit: "",
    labels: &["device", "stage"],
    help: "1 for the stage a drive being seasoned is in (purge, fill, image, rounds, compare, ...), labelled by stage.",
    from: "season",
};
/// A season stage's units done.
pub static SEASON_DONE: Metric = Metric {
    name: "drivelab_season_stage_done",
    kind: Kind::Gauge,
    unit: "",
    labels: &["device", "stage"],
    help:
        "Units done in the stage: bytes (purge, fill, image), or the running round's I/Os (rounds).",
    from: "season",
};
/// A season stage's units planned.
pub static SEASON_PLANNED: Metric = Metric {
    name: "drivelab_season_stage_planned",
    kind: Kind::Gauge,
    unit: "",
    labels: &["device", "stage"],
    help: "Units the stage has to do (absent when unknown, as for rounds).",
    from: "season",
};
/// A season's round.
pub static SEASON_ROUND: Metric = Metric {
    name: "drivelab_season_round",
    kind: Kind::Gauge,
    unit: "",
    labels: &["device"],
    help: "The steady-state round running (or last run), of at most drivelab_season_max_rounds.",
    from: "season",
};
/// A season's most rounds.
pub static SEASON_MAX_ROUNDS: Metric = Metric {
    name: "drivelab_season_max_rounds",
    kind: Kind::Gauge,
    unit: "",
    labels: &["device"],
    help: "The most steady-state rounds the season runs (--max-rounds).",
    from: "season",
};
/// Time in a season stage.
pub static SEASON_STAGE_SECONDS: Metric = Metric {
    name: "drivelab_season_stage_seconds",
    kind: Kind::Gauge,
    unit: "seconds",
    labels: &["device", "stage"],
    help: "Seconds since the stage (in rounds: the round) began.",
    from: "season",
};

/// A station drive's state.
pub static STATION_STATE: Metric = Metric {
    name: "drivelab_station_drive_state",
    kind: Kind::Gauge,
    unit: "",
    labels: &["device", "serial", "bay", "state"],
    help: "1 for the state of a drive the station sees (detected, identified, outside, triage, held, erasing, verifying, certified, failed, removed, aborted), 0 for the others; bay is empty for a drive in no bay.",
    from: "station",
};
/// Drives per state.
pub static STATION_DRIVES: Metric = Metric {
    name: "drivelab_station_drives",
    kind: Kind::Gauge,
    unit: "",
    labels: &["state"],
    help: "How many of the drives the station sees are in each state.",
    from: "station",
};
/// A station drive's bytes done.
pub static STATION_DONE: Metric = Metric {
    name: "drivelab_station_drive_done_bytes",
    kind: Kind::Gauge,
    unit: "bytes",
    labels: BAY,
    help: "Bytes done of the drive's current phase (erasing: every pass; verifying: read back), as its row shows.",
    from: "station",
};
/// A station drive's bytes planned.
pub static STATION_TOTAL: Metric = Metric {
    name: "drivelab_station_drive_planned_bytes",
    kind: Kind::Gauge,
    unit: "bytes",
    labels: BAY,
    help: "Bytes the drive's current phase has to do in all (0 before its erase begins).",
    from: "station",
};
/// A station drive's progress.
pub static STATION_PROGRESS: Metric = Metric {
    name: "drivelab_station_drive_progress_ratio",
    kind: Kind::Gauge,
    unit: "ratio",
    labels: BAY,
    help: "Share of the drive's current phase done, 0..1 (its row's percent / 100).",
    from: "station",
};
/// A station drive's speed.
pub static STATION_THROUGHPUT: Metric = Metric {
    name: "drivelab_station_drive_throughput_bytes_per_second",
    kind: Kind::Gauge,
    unit: "",
    labels: BAY,
    help: "Bytes per second of the drive's current phase over the last 5 s, as its row shows (0 when it is not busy).",
    from: "station",
};
/// A station drive's time left.
pub static STATION_ETA: Metric = Metric {
    name: "drivelab_station_drive_eta_seconds",
    kind: Kind::Gauge,
    unit: "seconds",
    labels: BAY,
    help: "Seconds the drive's current phase still needs at its speed (absent while no speed is known).",
    from: "station",
};
/// A station drive's temperature.
pub static STATION_TEMPERATURE: Metric = Metric {
    name: "drivelab_station_drive_temperature_celsius",
    kind: Kind::Gauge,
    unit: "celsius",
    labels: BAY,
    help: "The drive's temperature as its row shows it: the kernel's hwmon (drivetemp, nvme), read every 10 s while the drive is erased or verified, else its health read at triage; absent when it reports none.",
    from: "station",
};

/// Every metric, in the order of the documentation table.
pub static CATALOG: &[&Metric] = &[
    &BUILD,
    &CLAIM,
    &FINISHED,
    &JOB_IOS,
    &JOB_BYTES,
    &JOB_ERRORS,
    &JOB_LATENCY,
    &JOB_RUNTIME,
    &DEV_READ_IOPS,
    &DEV_WRITE_IOPS,
    &DEV_READ_BPS,
    &DEV_WRITE_BPS,
    &DEV_UTIL,
    &DEV_QUEUE,
    &DEV_BYTES,
    &ERASE_STATE,
    &ERASE_DONE,
    &ERASE_TOTAL,
    &ERASE_PROGRESS,
    &ERASE_THROUGHPUT,
    &ERASE_ETA,
    &ERASE_ELAPSED,
    &ERASE_ESTIMATE,
    &DRIVE_TEMPERATURE,
    &DRIVE_HEALTH,
    &DRIVE_USED,
    &REPLAY_PLANNED,
    &REPLAY_ISSUED,
    &REPLAY_COMPLETED,
    &REPLAY_FAILED,
    &REPLAY_BYTES,
    &TEST_STEP_STATE,
    &TEST_STEP_DONE,
    &TEST_STEP_PLANNED,
    &TEST_IOS,
    &TEST_BYTES,
    &TEST_IO_ERRORS,
    &TEST_MISCOMPARES,
    &TEST_BAD_BLOCKS,
    &SEASON_STAGE,
    &SEASON_DONE,
    &SEASON_PLANNED,
    &SEASON_ROUND,
    &SEASON_MAX_ROUNDS,
    &SEASON_STAGE_SECONDS,
    &STATION_STATE,
    &STATION_DRIVES,
    &STATION_DONE,
    &STATION_TOTAL,
    &STATION_PROGRESS,
    &STATION_THROUGHPUT,
    &STATION_ETA,
    &STATION_TEMPERATURE,
];

/// The documentation table (Markdown), `docs/metrics.md`.
pub fn table() -> String {
    let mut s = String::from(
        "# drivelab's metrics\n\n\
         Served by `--metrics-listen ADDR` on `drivelab run`, `test`, `erase`, `season`,\n\
         `station` and `trace replay` (GET /metrics; OpenMetrics text when the scraper asks for it, else\n\
         Prometheus text 0.0.4; both written by the `prometheus-client` crate).\n\
         Generated from `crates/metrics/src/model/catalog.rs`\n\
         (`cargo test -p drivelab-metrics --test docs` checks this file;\n\
         `UPDATE_DOCS=1` rewrites it). Alerting and recording rules for labs:\n\
         `deploy/prometheus/drivelab-rules.yml`.\n\n\
         | sample name | type | unit | labels | from | what |\n|---|---|---|---|---|---|\n",
    );
    for m in CATALOG {
        let sample = match m.kind {
            Kind::Histogram => format!("`{0}_bucket`, `{0}_count`, `{0}_sum`", m.name),
            _ => format!("`{}`", m.sample_name()),
        };
        s.push_str(&format!(
            "| {sample} | {} | {} | {} | {} | {} |\n",
            m.kind.openmetrics(),
            if m.unit.is_empty() { "-" } else { m.unit },
            if m.labels.is_empty() {
                "-".to_string()
            } else {
                m.labels.join(", ")
            },
            m.from,
            m.help
        ));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_follow_prometheus_conventions() {
        let mut seen = std::collections::BTreeSet::new();
        for m in CATALOG {
            assert!(seen.insert(m.name), "{} declared twice", m.name);
            assert!(m.name.starts_with("drivelab_"), "{}", m.name);
            assert!(
                m.name
                    .chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_'),
                "{}",
                m.name
            );
            // The unit is the name's last word; counters get `_total` only
            // when written.
            if !m.unit.is_empty() {
                assert!(m.name.ends_with(&format!("_{}", m.unit)), "{}", m.name);
            }
            assert!(!m.name.ends_with("_total"), "{}", m.name);
            // `job` is Prometheus's own target label: never one of ours.
            assert!(!m.labels.contains(&"job"), "{}", m.name);
            assert!(m.help.ends_with('.'), "{}", m.name);
        }
    }
}

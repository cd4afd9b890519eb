//! The one result struct every exporter reads. Field names and units follow
//! fio's JSON output where fio has the field (so tools that read fio's JSON
//! read ours); drivelab-only facts live under their own keys
//! (`device_check`, `timeseries`, `lat_from_intended_ns`).

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

/// A whole `drivelab run`.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct RunReport {
    /// The key fio's JSON readers (fio-plot) recognise fio's format by;
    /// its value names drivelab and its version ("drivelab-0.1.0"), never
    /// fio's.
    #[serde(rename = "fio version", default)]
    pub fio_version: String,
    /// drivelab's version ("drivelab-0.1.0").
    #[serde(rename = "drivelab version")]
    pub drivelab_version: String,
    /// Unix time (s) when the run started.
    pub timestamp: u64,
    /// Unix time (ms) when the run started.
    pub timestamp_ms: u64,
    /// The same, human-readable (UTC).
    pub time: String,
    /// The options of the job file's `[global]` section, as written
    /// (fio's `global options`; empty without a job file).
    #[serde(rename = "global options", default)]
    pub global_options: BTreeMap<String, String>,
    /// One entry per job (per clone with numjobs > 1).
    pub jobs: Vec<JobReport>,
    /// Device counters over the measured window, fio's `disk_util`.
    pub disk_util: Vec<DiskUtil>,
    /// drivelab's audit: what each device saw against what we reported.
    pub device_check: Vec<DeviceCheck>,
    /// The run was stopped early (Ctrl-C); numbers cover the time run.
    pub interrupted: bool,
    /// The write claim of every target the run wrote: the safety
    /// assessment made before the first write, what `--force` overrode,
    /// and how the target was held for the run.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub claims: Vec<drivelab_device::claim::ClaimRecord>,
    /// A run-level error, if the run failed after starting.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// fio engine names the run was given and the drivelab engine each ran
    /// on (`libaio` → `io_uring`); empty when every name was drivelab's.
    #[serde(skip_serializing_if = "BTreeMap::is_empty", default)]
    pub ioengine_map: BTreeMap<String, String>,
    /// What drivelab's engine does regardless of an engine option the run
    /// was given (io_uring's `fixedbufs`, libaio's `userspace_reap`), each
    /// said once; empty when none was given.
    #[serde(skip_serializing_if = "BTreeSet::is_empty", default)]
    pub ioengine_notes: BTreeSet<String>,
}

/// One job's results.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct JobReport {
    /// The job's name.
    pub jobname: String,
    /// Group id (always 0: drivelab reports every job).
    pub groupid: u32,
    /// errno of the first I/O error, 0 when none (fio's `error`).
    pub error: i32,
    /// The first I/O error in words (op, target, offset, errno text).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error_detail: Option<String>,
    /// The I/O errors the job met (it stops at the first, as fio does):
    /// device, LBA range, errno, and for reads the exact unreadable LBAs.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub errors: Vec<IoErrorReport>,
    /// Errors the job met, those it went past included; present when
    /// `continue_on_error` (or `ignore_error`) is set (fio's `total_err`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub total_err: Option<u64>,
    /// errno of the first of them, 0 when none; present with `total_err`
    /// (fio's `first_error`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_error: Option<i32>,
    /// How drivelab ran options it takes differently from fio, one line
    /// each (e.g. `verify_async`: checks run on the job's thread).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
    /// Seconds left when the report was made (always 0: reports are made
    /// at the end; fio's `eta`).
    #[serde(default)]
    pub eta: u64,
    /// Wall time of the job from its start, ramp included, in whole
    /// seconds rounded up (fio's `elapsed`).
    #[serde(default)]
    pub elapsed: u64,
    /// The job's options: fio's `job options`, the options set for this
    /// job as written (the job file's section or the command line), plus
    /// what drivelab resolved (`filename`, `access`, `direct`…).
    #[serde(rename = "job options")]
    pub job_options: BTreeMap<String, String>,
    /// Reads (absent, as in fio's JSON, when `unified_rw_reporting=mixed`
    /// folds the directions into `mixed`).
    #[serde(default, skip_serializing_if = "DirReport::is_folded")]
    pub read: DirReport,
    /// Writes (see `read`).
    #[serde(default, skip_serializing_if = "DirReport::is_folded")]
    pub write: DirReport,
    /// Trims (see `read`).
    #[serde(default, skip_serializing_if = "DirReport::is_folded")]
    pub trim: DirReport,
    /// Reads, writes and trims summed into one direction (fio's `mixed`,
    /// with `unified_rw_reporting=mixed` or `both`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mixed: Option<DirReport>,
    /// Syncs (fsync): count and latency.
    pub sync: SyncReport,
    /// Measured run time of the job, ms.
    pub job_runtime: u64,
    /// User CPU of the job's thread, % of job_runtime.
    pub usr_cpu: f64,
    /// System CPU of the job's thread, % of job_runtime.
    pub sys_cpu: f64,
    /// Context switches.
    pub ctx: u64,
    /// Major page faults of the job's thread (fio's `majf`).
    #[serde(default)]
    pub majf: u64,
    /// Minor page faults of the job's thread (fio's `minf`).
    #[serde(default)]
    pub minf: u64,
    /// `zonemode=zbd`: the zone resets the job did (fio prints them after
    /// the write line); absent for other jobs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub zone_resets: Option<u64>,
    /// Percent of I/Os queued at each depth: keys 1, 2, 4, 8, 16, 32 and
    /// `>=64`, each counting depths from its key to the next (fio's
    /// `iodepth_level`).
    #[serde(default)]
    pub iodepth_level: OrderedMap<f64>,
    /// Percent of submitting calls by the I/Os they submitted: key K counts
    /// calls of more than the previous key and at most K (0 = none, `>=64`
    /// above 64; fio's `iodepth_submit`).
    #[serde(default)]
    pub iodepth_submit: OrderedMap<f64>,
    /// The same for reaping calls (fio's `iodepth_complete`).
    #[serde(default)]
    pub iodepth_complete: OrderedMap<f64>,
    /// Percent of I/Os whose latency is below each key, ns, and at least
    /// the previous key (fio's `latency_ns`: 2 … 1000).
    #[serde(default)]
    pub latency_ns: OrderedMap<f64>,
    /// The same in µs (fio's `latency_us`: 2 … 1000).
    #[serde(default)]
    pub latency_us: OrderedMap<f64>,
    /// The same in ms (fio's `latency_ms`: 2 … 2000, then `>=2000`).
    #[serde(default)]
    pub latency_ms: OrderedMap<f64>,
    /// Queue depth the job ran at (fio's `latency_depth`).
    #[serde(default)]
    pub latency_depth: u32,
    /// `latency_target`, ns (0 = none).
    #[serde(default)]
    pub latency_target: u64,
    /// `latency_percentile`, percent (100 without a target).
    #[serde(default)]
    pub latency_percentile: f64,
    /// `latency_window`, µs (0 = none).
    #[serde(default)]
    pub latency_window: u64,
    /// fio's `steadystate` block (only with `steadystate_duration`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub steadystate: Option<SteadyStateReport>,
    /// CPU time per I/O, ns (user + system) — drivelab-only.
    pub cpu_ns_per_io: f64,
    /// Per-interval series (drivelab-only).
    pub timeseries: Vec<SeriesPoint>,
    /// The I/O engine used.
    pub ioengine: String,
    /// The units of the job's text report (`kb_base`, `unit_base`,
    /// `significant_figures`); drivelab-only, absent at fio's defaults.
    #[serde(
        default,
        rename = "text_units",
        skip_serializing_if = "TextUnits::is_default"
    )]
    pub text_units: TextUnits,
    /// fio's trim block lifetime section is shown
    /// (`block_error_percentiles`). fio counts a block's states and trim
    /// cycles only once one of its trims has completed under the option,
    /// and prints the section's heading and an all-zero states line while
    /// none has; drivelab records no trim block lifetimes, so it prints
    /// that. drivelab-only, absent without the option.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub block_error_percentiles: bool,
}

/// How the text report writes a job's figures, as fio's `kb_base`,
/// `unit_base` and `significant_figures` ask.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
pub struct TextUnits {
    /// 1024: binary units first (the default); 1000: decimal first.
    pub kb_base: u32,
    /// Bandwidth in bits (`unit_base=1`), not bytes.
    pub bits: bool,
    /// Significant figures of IOPS, bandwidth and sizes (default 4).
    pub sig_figs: u8,
}

impl Default for TextUnits {
    fn default() -> Self {
        TextUnits {
            kb_base: 1024,
            bits: false,
            sig_figs: 4,
        }
    }
}

impl TextUnits {
    /// Whether these are fio's defaults.
    pub fn is_default(&self) -> bool {
        *self == TextUnits::default()
    }
}

impl JobReport {
    /// Whether an error ended the job: `error` is set and it is not only
    /// the first of errors the job went past (`continue_on_error`, where
    /// fio's `error` is `first_error` and the run still succeeds).
    pub fn ended_by_error(&self) -> bool {
        self.error != 0 && !(self.total_err.is_some() && self.error_detail.is_none())
    }
}

/// fio's per-job `steadystate` object.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct SteadyStateReport {
    /// The rule as fio prints it (`iops_slope:0.100000%`).
    pub ss: String,
    /// The window, s.
    pub duration: u64,
    /// 1 when steady state was attained (the job ended on it), else 0.
    pub attained: u8,
    /// The last judgement's slope or deviation (`0.400000%` for a
    /// percent rule).
    pub criterion: String,
    /// Largest deviation from the window's mean (deviation rules).
    pub max_deviation: f64,
    /// Least-squares slope per interval (slope rules).
    pub slope: f64,
    /// The window's values.
    pub data: SteadyStateData,
}

/// The values of fio's steady-state window, oldest first.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct SteadyStateData {
    /// Mean bandwidth over the window (unfilled intervals count 0), bytes/s.
    pub bw_mean: u64,
    /// Mean IOPS the same way.
    pub iops_mean: u64,
    /// IOPS per interval.
    pub iops: Vec<u64>,
    /// Bandwidth per interval, bytes/s.
    pub bw: Vec<u64>,
}

/// One failed I/O of a job.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq, Eq)]
pub struct IoErrorReport {
    /// read, write, trim or fsync.
    pub op: String,
    /// The target's path.
    pub device: String,
    /// Byte offset of the failed I/O.
    pub offset: u64,
    /// Its length in bytes.
    pub len: u64,
    /// First logical block it covered (in the target's logical block
    /// size); absent for a flush, which covers no blocks.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_lba: Option<u64>,
    /// Last logical block it covered; absent for a flush.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_lba: Option<u64>,
    /// errno.
    pub errno: i32,
    /// The errno in words.
    pub error: String,
    /// The job went past it (`continue_on_error`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub passed: bool,
    /// A failed read re-read in ever smaller pieces: the blocks that still
    /// cannot be read, as inclusive LBA ranges (empty when every piece read
    /// fine the second time). Absent when not narrowed (writes, or the
    /// target could not be reopened for direct reads).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unreadable: Option<Vec<LbaRange>>,
}

/// An inclusive range of logical blocks.
#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize, PartialEq, Eq)]
pub struct LbaRange {
    /// First block.
    pub first_lba: u64,
    /// Last block.
    pub last_lba: u64,
}

/// One direction's results (fio's `read` / `write` / `trim` objects).
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct DirReport {
    /// Bytes moved.
    pub io_bytes: u64,
    /// KiB moved.
    pub io_kbytes: u64,
    /// Bandwidth, bytes/s.
    pub bw_bytes: u64,
    /// Bandwidth, KiB/s.
    pub bw: u64,
    /// I/O per second.
    pub iops: f64,
    /// Measured time, ms.
    pub runtime: u64,
    /// Completed I/Os.
    pub total_ios: u64,
    /// I/Os that moved fewer bytes than asked.
    pub short_ios: u64,
    /// I/Os dropped (always 0: drivelab does not drop).
    pub drop_ios: u64,
    /// Submission latency, ns: zero, since submission and completion are
    /// timed from the same system call (see `lat_ns`).
    pub slat_ns: LatReport,
    /// Completion latency, ns: from just before the submitting system call to
    /// just after the reaping one.
    pub clat_ns: LatReport,
    /// Total latency, ns (equal to clat_ns, see slat_ns).
    pub lat_ns: LatReport,
    /// Completion latency per I/O priority (fio's `prios`), when the
    /// direction's I/Os went with two or more priorities (`cmdprio*`).
    #[serde(skip_serializing_if = "Vec::is_empty", default)]
    pub prios: Vec<PrioReport>,
    /// Smallest bandwidth sample, KiB/s. Samples are taken every 500 ms
    /// (fio's `bwavgtime`; a window in which the direction moved nothing
    /// adds none).
    #[serde(default)]
    pub bw_min: u64,
    /// Largest bandwidth sample, KiB/s.
    #[serde(default)]
    pub bw_max: u64,
    /// This job's share of its group's bandwidth, percent (fio's `bw_agg`).
    #[serde(default)]
    pub bw_agg: f64,
    /// Mean bandwidth sample, KiB/s.
    #[serde(default)]
    pub bw_mean: f64,
    /// Standard deviation of the bandwidth samples, KiB/s.
    #[serde(default)]
    pub bw_dev: f64,
    /// Number of bandwidth samples.
    #[serde(default)]
    pub bw_samples: u64,
    /// Smallest IOPS sample (every 500 ms, fio's `iopsavgtime`).
    #[serde(default)]
    pub iops_min: u64,
    /// Largest IOPS sample.
    #[serde(default)]
    pub iops_max: u64,
    /// Mean IOPS sample.
    #[serde(default)]
    pub iops_mean: f64,
    /// Standard deviation of the IOPS samples.
    #[serde(default)]
    pub iops_stddev: f64,
    /// Number of IOPS samples.
    #[serde(default)]
    pub iops_samples: u64,
    /// Latency from the intended issue time, ns (rate-limited runs only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lat_from_intended_ns: Option<LatReport>,
    /// Summed into the job's `mixed` direction and left out of the JSON
    /// (`unified_rw_reporting=mixed`).
    #[serde(skip)]
    pub folded: bool,
}

impl DirReport {
    /// Whether the direction is folded into `mixed` (see `folded`).
    pub fn is_folded(&self) -> bool {
        self.folded
    }
}

/// One I/O priority's completion latency (an entry of fio's `prios`).
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct PrioReport {
    /// The priority class (1 realtime, 2 best-effort, 3 idle; 0 none).
    pub prioclass: u32,
    /// The priority level, 0-7.
    pub prio: u32,
    /// Completion latency of the I/Os with this priority, ns.
    pub clat_ns: LatReport,
}

/// fsync counts and latency (fio's `sync` object).
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct SyncReport {
    /// Completed syncs.
    pub total_ios: u64,
    /// Their latency, ns.
    pub lat_ns: LatReport,
}

/// Latency statistics, ns.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct LatReport {
    /// Smallest, ns.
    pub min: u64,
    /// Largest, ns.
    pub max: u64,
    /// Mean, ns.
    pub mean: f64,
    /// Standard deviation, ns.
    pub stddev: f64,
    /// Number of samples.
    #[serde(rename = "N")]
    pub n: u64,
    /// Percentiles, keyed as fio does ("99.000000"), ns.
    #[serde(skip_serializing_if = "BTreeMap::is_empty", default)]
    pub percentile: BTreeMap<String, u64>,
    /// `json+` only: the latency histogram in fio's buckets, keyed by the
    /// value fio's `plat_idx_to_val` gives each bucket (ns), in order;
    /// empty (left out) otherwise. See [`crate::jsonplus`].
    #[serde(skip_serializing_if = "OrderedMap::is_empty", default)]
    pub bins: OrderedMap<u64>,
}

/// A JSON object whose keys keep the order they were inserted in (fio's
/// fixed key lists: `iodepth_level`, `latency_us`, `bins`…).
#[derive(Debug, Clone, PartialEq)]
pub struct OrderedMap<V>(pub Vec<(String, V)>);

impl<V> Default for OrderedMap<V> {
    fn default() -> Self {
        OrderedMap(Vec::new())
    }
}

impl<V> OrderedMap<V> {
    /// No keys.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The value of `key`.
    pub fn get(&self, key: &str) -> Option<&V> {
        self.0.iter().find(|(k, _)| k == key).map(|(_, v)| v)
    }
}

impl<V: Serialize> Serialize for OrderedMap<V> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut m = s.serialize_map(Some(self.0.len()))?;
        for (k, v) in &self.0 {
            m.serialize_entry(k, v)?;
        }
        m.end()
    }
}

impl<'de, V: Deserialize<'de>> Deserialize<'de> for OrderedMap<V> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Visit<V>(std::marker::PhantomData<V>);
        impl<'de, V: Deserialize<'de>> serde::de::Visitor<'de> for Visit<V> {
            type Value = OrderedMap<V>;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("an object")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                mut a: A,
            ) -> Result<Self::Value, A::Error> {
                let mut v = Vec::new();
                while let Some(e) = a.next_entry()? {
                    v.push(e);
                }
                Ok(OrderedMap(v))
            }
        }
        d.deserialize_map(Visit(std::marker::PhantomData))
    }
}

/// One interval of the series.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct SeriesPoint {
    /// Interval start, seconds from the start of measurement.
    pub t_s: f64,
    /// I/O per second in the interval.
    pub iops: f64,
    /// Bytes per second in the interval.
    pub bw_bytes: f64,
    /// Mean latency in the interval, ns.
    pub lat_mean_ns: f64,
    /// 99th percentile latency in the interval, ns.
    pub lat_p99_ns: u64,
}

/// fio's `disk_util` entry: the device's own counters over the measured
/// window (deltas of /proc/diskstats).
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct DiskUtil {
    /// Device name (loop0, nvme0n1…).
    pub name: String,
    /// Reads completed.
    pub read_ios: u64,
    /// Writes completed.
    pub write_ios: u64,
    /// Reads merged.
    pub read_merges: u64,
    /// Writes merged.
    pub write_merges: u64,
    /// Time spent reading, ms.
    pub read_ticks: u64,
    /// Time spent writing, ms.
    pub write_ticks: u64,
    /// Weighted time in queue, ms.
    pub in_queue: u64,
    /// Busy time over the window, percent.
    pub util: f64,
}

/// What the device saw against what drivelab reported, for one device.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct DeviceCheck {
    /// Device name.
    pub device: String,
    /// Bytes drivelab reported moving to/from this device (all directions).
    pub reported_bytes: u64,
    /// Bytes the device counted (diskstats sectors × 512) over the window.
    pub device_bytes: u64,
    /// device_bytes / reported_bytes (1.0 = exact).
    pub ratio: f64,
    /// I/Os drivelab reported.
    pub reported_ios: u64,
    /// I/Os the device completed.
    pub device_ios: u64,
    /// Flushes the device completed (diskstats fields 16-17, kernels 5.5
    /// and later; 0 before): a sync (`fsync`, `fdatasync`) reaches a block
    /// device as a flush, which some drivers also count as an empty write.
    #[serde(default)]
    pub device_flushes: u64,
    /// 1-second samples in which the device completed nothing.
    pub idle_seconds: u32,
    /// Samples taken.
    pub samples: u32,
    /// Coefficient of variation of the device's per-second throughput.
    pub throughput_cov: f64,
    /// "agrees", or what disagrees, in words.
    pub verdict: String,
    /// Whether the verdict is "agrees".
    pub agrees: bool,
    /// The device's own per-second series, one entry per diskstats sample
    /// (iostat's fields); empty when the device was not sampled.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub series: Vec<DeviceSecond>,
    /// Requests the run asked to keep in flight on this device: the
    /// `iodepth` of every job on it (1 for psync), a job spread over
    /// several devices counting each its share; with stonewall groups, the
    /// largest group's. 0 when no job used it.
    #[serde(default)]
    pub asked_depth: f64,
    /// The device's own time-weighted mean queue depth over the window:
    /// diskstats' weighted time in queue (field 11) delta over the elapsed
    /// milliseconds (iostat `aqu-sz`).
    #[serde(default)]
    pub device_depth: f64,
    /// Whether `device_depth` reached 90% of `asked_depth` (the tolerance
    /// is argued in `drivelab_workload::run::device_check`).
    #[serde(default)]
    pub holds_depth: bool,
    /// The depth verdict in words: "holds depth 31.6 of 32", or how much
    /// the device saw and why not more.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub depth_verdict: String,
}

/// One diskstats sample of a device: what iostat prints for one interval
/// (sysstat's `iostat -x` definitions, from the deltas of two
/// `/proc/diskstats` readings over the interval's wall time).
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct DeviceSecond {
    /// Interval start, seconds from the start of measurement (the engine
    /// series' convention, so the two overlay).
    pub t_s: f64,
    /// Reads completed per second (iostat `r/s`).
    pub r_iops: f64,
    /// Writes completed per second (iostat `w/s`).
    pub w_iops: f64,
    /// Bytes read per second (iostat `rkB/s` × 1024).
    pub r_bw_bytes: f64,
    /// Bytes written per second (iostat `wkB/s` × 1024).
    pub w_bw_bytes: f64,
    /// Percent of the interval with at least one I/O in flight (iostat
    /// `%util`: `io_ticks` delta over the interval, at most 100).
    pub util_pct: f64,
    /// Average number of requests in flight (iostat `aqu-sz`: weighted
    /// time-in-queue delta over the interval).
    pub aqu_sz: f64,
    /// Mean read time, ms (iostat `r_await`: read ticks delta over reads
    /// completed; 0 with no reads).
    pub r_await_ms: f64,
    /// Mean write time, ms (iostat `w_await`: write ticks delta over writes
    /// completed; 0 with no writes).
    pub w_await_ms: f64,
}

impl DeviceSecond {
    /// The iostat figures of one diskstats interval that started `t_s`
    /// seconds after the start of measurement.
    pub fn from_delta(t_s: f64, d: &drivelab_device::diskstats::Delta) -> DeviceSecond {
        let secs = d.elapsed.as_secs_f64();
        let per_sec = |n: u64| if secs > 0.0 { n as f64 / secs } else { 0.0 };
        DeviceSecond {
            t_s,
            r_iops: per_sec(d.read_ios),
            w_iops: per_sec(d.write_ios),
            r_bw_bytes: d.read_bytes_per_sec(),
            w_bw_bytes: d.write_bytes_per_sec(),
            util_pct: d.util() * 100.0,
            aqu_sz: d.avg_queue_size(),
            r_await_ms: d.read_await_ms(),
            w_await_ms: d.write_await_ms(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use drivelab_device::diskstats::DiskStats;
    use std::time::Duration;

    /// Two readings of /proc/diskstats 2 s apart, and what `iostat -x 2`
    /// prints for them, worked out by hand from sysstat's definitions:
    /// r/s = Δreads/Δt, rkB/s = Δsectors_read/2/Δt, r_await = Δread_ticks/Δreads,
    /// aqu-sz = Δtime_in_queue/Δt(ms), %util = Δio_ticks/Δt(ms)×100.
    #[test]
    fn device_second_is_iostat_x() {
        let before = DiskStats::parse_line(
            "259 0 nvme0n1 1000 10 80000 500 2000 20 160000 3000 0 4000 9000 0 0 0 0 0 0",
        )
        .unwrap();
        let after = DiskStats::parse_line(
            "259 0 nvme0n1 1400 10 86400 900 2600 20 185600 4800 3 5500 12300 0 0 0 0 0 0",
        )
        .unwrap();
        let d = after.delta_since(&before, Duration::from_secs(2));
        let s = DeviceSecond::from_delta(4.0, &d);
        assert_eq!(s.t_s, 4.0);
        // 400 reads, 600 writes in 2 s.
        assert!((s.r_iops - 200.0).abs() < 1e-9);
        assert!((s.w_iops - 300.0).abs() < 1e-9);
        // 6400 sectors read = 3200 KiB in 2 s = 1600 KiB/s.
        assert!((s.r_bw_bytes - 1600.0 * 1024.0).abs() < 1e-6);
        // 25600 sectors written = 12800 KiB in 2 s = 6400 KiB/s.
        assert!((s.w_bw_bytes - 6400.0 * 1024.0).abs() < 1e-6);
        // 1500 ms busy in 2000 ms.
        assert!((s.util_pct - 75.0).abs() < 1e-9);
        // 3300 weighted ms over 2000 ms.
        assert!((s.aqu_sz - 1.65).abs() < 1e-9);
        // 400 ms over 400 reads; 1800 ms over 600 writes.
        assert!((s.r_await_ms - 1.0).abs() < 1e-9);
        assert!((s.w_await_ms - 3.0).abs() < 1e-9);
        // An idle interval: no division by zero.
        let idle =
            DeviceSecond::from_delta(0.0, &before.delta_since(&before, Duration::from_secs(1)));
        assert_eq!(
            (idle.r_iops, idle.r_await_ms, idle.util_pct),
            (0.0, 0.0, 0.0)
        );
    }

    #[test]
    fn device_check_without_series_reads_and_writes_as_before() {
        let c = DeviceCheck::default();
        let v = serde_json::to_value(&c).unwrap();
        assert!(v.get("series").is_none());
        let back: DeviceCheck = serde_json::from_value(v).unwrap();
        assert_eq!(back, c);
    }
}

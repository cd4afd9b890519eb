//! The WinTrace32 part: record block requests from the running kernel's
//! block tracepoints (`block/block_rq_issue`, `block/block_rq_complete`,
//! `block/block_rq_requeue`), so blktrace's relay files are not needed.
//! Two recorders feed the same matcher and give the same requests:
//!
//! - **BPF** ([`bpf`], chosen by [`RecorderKind::Auto`] for bio-based
//!   devices when the kernel allows it): BTF-typed raw-tracepoint programs
//!   write a 32-byte record per event into their CPU's ring of slots in
//!   an mmap'ed array, read through its mapping and merged in time order;
//!   records overwritten before they were read are counted. No tracefs
//!   instance, no lock, and the kernel formats nothing per event. On
//!   request-based devices its `block_rq_complete` program misses a few
//!   completions in a hundred thousand (loop devices under a mixed
//!   random load) with no loss reported by the kernel, so `auto` does not
//!   choose it there.
//! - **tracefs** (request-based devices, the fallback, and `--recorder
//!   tracefs`): a private tracefs instance, so nothing else using ftrace
//!   is disturbed; the rest of this doc describes it.
//!
//! **Spooled.** A recording written to a file ([`record`], and a
//! replay's own recording) only copies while it runs: each drain appends
//! what it read (BPF records, tracefs's binary pages), tagged with the CPU,
//! to an unlinked scratch file beside the output
//! ([`Recorder::spool_beside`], [`spool`]), and the decoding, the merge,
//! the matching and the writing run after the stop, over the same bytes in
//! the same passes, so the trace is the one the live reader gives. The
//! reader's share of the CPU while the workload runs was most of what the
//! BPF recorder cost on zram at full speed. The spool takes 64 bytes a
//! request with BPF and about 160 with tracefs's pages (4 KiB random
//! reads), on the output's filesystem until the stop.
//!
//! Either way the recording is held against the devices' own count of
//! finished requests ([`devstat`]): completions the device counted and the
//! trace lacks are [`RecordSummary::missed_completions`], part of
//! [`RecordSummary::lost_events`].
//!
//! [`Recorder::start`] creates `/sys/kernel/tracing/instances/drivelab-<pid>`
//! (suffixed `-N` for a second recorder in one process), sizes its buffer
//! ([`RecordOptions::buffer_kb_per_cpu`]), selects the `mono` trace clock
//! when offered (so times line up with CLOCK_MONOTONIC), filters each event
//! to the devices' kernel `dev_t` (`dev == …`), writes a start marker into
//! the instance (time zero of the recording) and enables the events.
//! Bio-based devices (zram, device-mapper, md: no `mq` directory in sysfs)
//! never make requests, so for them `block_bio_queue` and
//! `block_bio_complete` stand for issue and completion.
//! Issues and completions are matched by (dev, sector) with partial
//! completions and requeues handled (see [`crate::matcher`]). Lost events
//! (the per-CPU `overrun` and `dropped events` counters) are summed and
//! reported in [`RecordSummary::lost_events`]; [`record`] fails with
//! [`TraceError::LostEvents`] when any were lost. [`Recorder::stop`] (or
//! dropping the recorder) disables the events and removes the instance.
//!
//! **Reading: binary first.** With the `mono` clock, the events are read
//! in the ring buffer's own binary pages from every CPU's
//! `per_cpu/cpuN/trace_pipe_raw` (layout from `events/header_page`, field
//! offsets from each event's `format` file): the kernel only copies pages,
//! where the text of `trace_pipe` costs it a `printf` per event, and at
//! 4 KiB random reads on zram (hundreds of thousands of I/Os a second, two
//! events each) the text reader fell behind and the ring overran (issue 15:
//! 625,792 events lost at about 100k IOPS). The CPUs' events are merged in
//! time order up to a watermark a few milliseconds behind the moment every
//! CPU was drained (an event is committed within microseconds of its
//! timestamp, with preemption off), so the matcher sees them as the text
//! pipe would give them. Times keep their nanoseconds. Without `mono` (or
//! if the binary layout is not the one known here) the text of
//! `trace_pipe` is read instead: times in microseconds, the payload parsed
//! tolerantly (`maj,min rwbs … sector + nr_sector …`, whatever fields older
//! or newer kernels put between or after them).
//!
//! **Buffer.** The default per-CPU buffer holds [`HOLD_S`] of events at
//! [`EXPECTED_IOPS`] spread over the CPUs (at least 16 MiB each), so the
//! reader may be kept off a CPU that long without losing anything; the
//! drain runs every few milliseconds while events arrive.

use std::fs::{File, OpenOptions};
use std::io::{ErrorKind, Read, Write};
use std::os::unix::fs::{FileTypeExt, MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::time::{Duration, Instant};

use serde::Serialize;

use crate::error::{Result, TraceError};
use crate::matcher::Matcher;
use crate::model::{kernel_dev, parse_rwbs_sized, Device, Op, Request};
use crate::source::{parse_seconds_ns, parse_u64, ws_fields, ReadStats};
use crate::Format;

mod bpf;
mod btf;
mod devstat;
mod event;
mod merge;
mod spool;

use spool::{Item, Spool};

pub(crate) use event::{Event, Rwbs};

pub use crate::error::BpfUnavailable;

/// Events enabled in the instance for request-based (blk-mq) devices.
pub const EVENTS: [&str; 3] = ["block_rq_issue", "block_rq_complete", "block_rq_requeue"];

/// Events enabled for bio-based devices (zram, device-mapper, md, brd),
/// which never make requests, so `block_rq_*` never fires for them: a
/// bio's queueing stands for its issue, its end for its completion.
pub const BIO_EVENTS: [&str; 2] = ["block_bio_queue", "block_bio_complete"];

/// Whether the device `maj:min` is bio-based: it has no blk-mq queue
/// (`/sys/dev/block/MAJ:MIN/mq`).
fn bio_based(maj: u32, min: u32) -> bool {
    let d = PathBuf::from(format!("/sys/dev/block/{maj}:{min}"));
    d.is_dir() && !d.join("mq").exists()
}

const MARKER: &str = "drivelab-record-start";

static INSTANCES: AtomicU32 = AtomicU32::new(0);

/// The request rate the default buffer is sized for: 500,000 I/Os a
/// second, above what this kind of machine reaches on zram (about 400k
/// IOPS at 4 KiB random reads) and what one core drives on NVMe.
pub const EXPECTED_IOPS: u64 = 500_000;

/// How long the default buffer holds events at [`EXPECTED_IOPS`] without
/// being read: 1 s (the reader is a thread that may be descheduled on a
/// busy machine).
pub const HOLD_S: u64 = 1;

/// Ring-buffer bytes one request takes: an issue event (68 bytes of
/// record with its header) and a completion (52), rounded up for page
/// headers and time extends.
const BYTES_PER_REQUEST: u64 = 128;

/// The largest per-CPU buffer, KiB: the kernel allocates one per online
/// CPU, and together they may take at most half of the machine's memory
/// (`MemTotal` in `/proc/meminfo`). `None` when the memory is unknown.
pub fn max_buffer_kb() -> Option<u64> {
    let meminfo = std::fs::read_to_string("/proc/meminfo").ok()?;
    let total_kb: u64 = meminfo
        .lines()
        .find_map(|l| l.strip_prefix("MemTotal:"))?
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse()
        .ok()?;
    let cpus = std::thread::available_parallelism()
        .map(|n| n.get() as u64)
        .unwrap_or(1);
    Some((total_kb / 2 / cpus).max(1))
}

/// The default per-CPU buffer, KiB: [`HOLD_S`] of [`EXPECTED_IOPS`]
/// requests spread over the online CPUs, at least 16 MiB per CPU.
pub fn default_buffer_kb() -> u64 {
    let cpus = std::thread::available_parallelism()
        .map(|n| n.get() as u64)
        .unwrap_or(1);
    (EXPECTED_IOPS * HOLD_S * BYTES_PER_REQUEST / cpus / 1024).max(16_384)
}

/// Which recorder reads the block tracepoints.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum RecorderKind {
    /// BPF when every device is bio-based and the kernel allows it (BTF,
    /// bpf(2), raw tracepoints), else tracefs (see the module doc).
    #[default]
    Auto,
    /// A tracefs instance (see the module doc).
    Tracefs,
    /// Raw-tracepoint BPF programs and per-CPU rings (see [`bpf`]); an
    /// error where the kernel does not allow it.
    Bpf,
}

impl std::str::FromStr for RecorderKind {
    type Err = String;
    fn from_str(s: &str) -> std::result::Result<Self, String> {
        match s {
            "auto" => Ok(RecorderKind::Auto),
            "tracefs" => Ok(RecorderKind::Tracefs),
            "bpf" => Ok(RecorderKind::Bpf),
            _ => Err(format!("unknown recorder {s:?}; give auto, tracefs or bpf")),
        }
    }
}

/// Recorder settings.
#[derive(Debug, Clone)]
pub struct RecordOptions {
    /// Per-CPU ring buffer size, KiB. Default [`default_buffer_kb`]. The
    /// BPF recorder's ring of each CPU holds as many requests as this
    /// buffer would (its records are smaller than tracefs's events), its
    /// slots rounded up to a power of two.
    pub buffer_kb_per_cpu: u64,
    /// tracefs mount point. Default: `/sys/kernel/tracing`, else
    /// `/sys/kernel/debug/tracing`.
    pub tracefs: Option<PathBuf>,
    /// Which recorder. Default [`RecorderKind::Auto`].
    pub recorder: RecorderKind,
}

impl Default for RecordOptions {
    fn default() -> Self {
        RecordOptions {
            buffer_kb_per_cpu: default_buffer_kb(),
            tracefs: None,
            recorder: RecorderKind::Auto,
        }
    }
}

/// What a recording saw.
#[derive(Debug, Clone, Default, Serialize, serde::Deserialize)]
#[serde(default)]
pub struct RecordSummary {
    /// Requests recorded.
    pub requests: u64,
    /// Requests with a completion.
    pub completed: u64,
    /// Events the trace lacks: lost in the kernel ring buffer (overrun +
    /// dropped, summed over CPUs) and [`missed_completions`]. Non-zero
    /// means the trace is incomplete.
    ///
    /// [`missed_completions`]: RecordSummary::missed_completions
    pub lost_events: u64,
    /// Requests the devices themselves counted as finished while the
    /// recording was attached (`/proc/diskstats`; see
    /// `record/devstat.rs`); absent where a device has no such count.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub device_finished: Option<u64>,
    /// How many more requests the devices finished in that window than
    /// the recording saw complete: completions no reader reported lost
    /// but that never reached the trace (included in `lost_events`).
    pub missed_completions: u64,
    /// Tracepoint lines parsed.
    pub events: u64,
    /// Completions with a non-zero error.
    pub errors: u64,
    /// Matching counters (unmatched, partial, requeues).
    pub matching: ReadStats,
    /// Seconds from start to stop.
    pub duration_s: f64,
    /// The trace clock used.
    pub clock: String,
    /// The tracefs instance used (removed at stop).
    pub instance: PathBuf,
    /// How events were read: `bpf` (raw-tracepoint programs and a BPF
    /// ring buffer), `raw` (tracefs's binary per-CPU pages) or `text`
    /// (`trace_pipe`).
    pub reader: String,
    /// Why the BPF recorder was not used when it was asked for by
    /// default (`--recorder auto`); empty otherwise.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub bpf_unavailable: String,
    /// With the BPF reader, how its programs attach: `tp_btf` (BTF-typed
    /// raw tracepoints, fields read by plain loads) or `raw_tp` (fields
    /// read by `bpf_probe_read_kernel`); empty otherwise.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub bpf_programs: String,
}

/// A running recording. See the module doc.
pub struct Recorder {
    /// The tracefs instance (empty with the BPF recorder).
    dir: PathBuf,
    pipe: Option<File>,
    raw: Option<Raw>,
    bpf: Option<bpf::Source>,
    /// Why BPF was not used under [`RecorderKind::Auto`].
    bpf_unavailable: String,
    matcher: Matcher,
    t0: Option<u64>,
    partial: Vec<u8>,
    devices: Vec<Device>,
    /// Per device: bio-based (recorded through [`BIO_EVENTS`]).
    bio: Vec<bool>,
    /// The devices' finished requests when the readers went live.
    finished_at_start: Option<u64>,
    /// With the BPF reader, the pause between drains (see
    /// [`bpf_interval`]).
    bpf_interval: Duration,
    /// Where drains copy what they read until the stop (see
    /// [`Recorder::spool_beside`]).
    spool: Option<Spool>,
    events: u64,
    errors: u64,
    /// Issues left out: empty non-flush requests, or beyond MAX_EXTENT.
    ignored: u64,
    requests: u64,
    completed: u64,
    clock: String,
    started: Instant,
    removed: bool,
}

fn tfs(what: &'static str, path: &Path, source: std::io::Error) -> TraceError {
    TraceError::Tracefs {
        what,
        path: path.to_path_buf(),
        source,
    }
}

fn write_file(path: &Path, text: &str) -> Result<()> {
    std::fs::write(path, text).map_err(|e| tfs("cannot write", path, e))
}

/// How long the BPF reader sleeps between drains: an eighth of the time
/// one CPU's ring of `per_cpu` records holds should all of
/// [`EXPECTED_IOPS`] come from that CPU, between 1 and 20 ms (the default
/// rings hold a quarter second or more that way). The reader is off the
/// CPUs the run needs for all but a few wakeups a second, where draining
/// whenever anything had arrived kept it waking hundreds of times a second
/// at full speed.
fn bpf_interval(per_cpu: u64) -> Duration {
    let holds = Duration::from_nanos(per_cpu.saturating_mul(1_000_000_000) / (EXPECTED_IOPS * 2));
    (holds / 8).clamp(Duration::from_millis(1), Duration::from_millis(20))
}

/// Records in each CPU's BPF ring for a per-CPU buffer of `kb_per_cpu`
/// KiB: room for as many requests as tracefs's buffer of that CPU holds
/// ([`BYTES_PER_REQUEST`] there, two records here), the rings of every
/// possible CPU within [`BPF_RINGS_MAX`] bytes. Rounded up to a power of
/// two when created.
fn bpf_records_per_cpu(kb_per_cpu: u64) -> u64 {
    let cpus = drivelab_device::bpf::possible_cpus() as u64;
    let cap = BPF_RINGS_MAX / (cpus * bpf::BYTES_PER_EVENT) / 2;
    (kb_per_cpu.saturating_mul(1024) / BYTES_PER_REQUEST * 2).clamp(64, cap.max(64))
}

/// The most memory the BPF recorder's rings take together: 1 GiB.
const BPF_RINGS_MAX: u64 = 1 << 30;

/// The BPF reader's priority while it records. Its rings hold a quarter
/// second or more of events (see [`bpf_interval`]), so it runs at the
/// lowest priority (nice 19) on time the workload leaves idle rather than
/// taking CPU time from the run it records (one A/B on zram at full speed,
/// two CPUs: 11.6 % against 13.6 % of IOPS, a difference later runs could
/// not tell from noise); once any CPU's ring is a quarter full it returns
/// to the caller's priority until they are nearly empty again, so a
/// machine with no idle time does not starve it into losing events. It is
/// lowered only where it can be raised back.
struct ReaderPriority {
    own: i32,
    low: bool,
}

impl ReaderPriority {
    const LOWEST: i32 = 19;
    const BEHIND: f64 = 0.25;
    const CAUGHT_UP: f64 = 0.05;

    fn lower() -> Option<ReaderPriority> {
        use drivelab_engine::sched::{set_thread_nice, thread_nice};
        let own = thread_nice().ok()?;
        if own >= Self::LOWEST {
            return None;
        }
        // Raising back must be allowed (CAP_SYS_NICE or RLIMIT_NICE).
        set_thread_nice(own + 1).ok()?;
        set_thread_nice(own).ok()?;
        set_thread_nice(Self::LOWEST).ok()?;
        Some(ReaderPriority { own, low: true })
    }

    /// Follow the fullest ring's `fill` (a fraction of the ring).
    fn follow(&mut self, fill: f64) {
        use drivelab_engine::sched::set_thread_nice;
        if self.low && fill > Self::BEHIND {
            self.low = set_thread_nice(self.own).is_err();
        } else if !self.low && fill < Self::CAUGHT_UP {
            self.low = set_thread_nice(Self::LOWEST).is_ok();
        }
    }
}

impl Drop for ReaderPriority {
    fn drop(&mut self) {
        let _ = drivelab_engine::sched::set_thread_nice(self.own);
    }
}

/// Whether an issue of `nr` sectors at `sector` is a request every reader
/// accepts back (see `source::check_request`): within MAX_EXTENT bytes.
fn recordable(sector: u64, nr: u64) -> bool {
    sector
        .checked_add(nr)
        .and_then(|s| s.checked_mul(512))
        .is_some_and(|end| end <= crate::source::MAX_EXTENT)
}

/// (major, minor) of a block device node.
pub fn block_dev_numbers(path: &Path) -> Result<(u32, u32)> {
    let md = std::fs::metadata(path).map_err(|e| TraceError::Device {
        path: path.to_path_buf(),
        msg: format!("cannot stat: {e}"),
    })?;
    if !md.file_type().is_block_device() {
        return Err(TraceError::Device {
            path: path.to_path_buf(),
            msg: "not a block device; give a device node such as /dev/sdb".into(),
        });
    }
    let dev = md.rdev();
    // glibc's gnu_dev_major / gnu_dev_minor encoding.
    let major = ((dev >> 8) & 0xfff) | ((dev >> 32) & !0xfff);
    let minor = (dev & 0xff) | ((dev >> 12) & !0xff);
    Ok((major as u32, minor as u32))
}

fn tracefs_root(opts: &RecordOptions) -> Result<PathBuf> {
    if let Some(p) = &opts.tracefs {
        return Ok(p.clone());
    }
    for p in ["/sys/kernel/tracing", "/sys/kernel/debug/tracing"] {
        let p = PathBuf::from(p);
        if p.join("instances").is_dir() {
            return Ok(p);
        }
    }
    Err(tfs(
        "no tracefs instances directory at",
        Path::new("/sys/kernel/tracing/instances"),
        std::io::Error::new(
            ErrorKind::NotFound,
            "not found (mount -t tracefs nodev /sys/kernel/tracing)",
        ),
    ))
}

/// Parse one line of trace_pipe text; `None` for lines of no interest or
/// that do not parse.
pub(crate) fn parse_event(line: &[u8]) -> Option<Event> {
    let text = std::str::from_utf8(line).ok()?;
    let (idx, kind) = if let Some(i) = text.find(": block_") {
        (i, 0)
    } else if let Some(i) = text.find(": tracing_mark_write: ") {
        (i, 1)
    } else {
        return None;
    };
    let ts = text[..idx].split_whitespace().last()?;
    let t = parse_seconds_ns(ts.as_bytes(), "timestamp").ok()?;
    let rest = &text[idx + 2..];
    if kind == 1 {
        return rest.contains(MARKER).then_some(Event::Marker { t });
    }
    let colon = rest.find(": ")?;
    let name = &rest[..colon];
    let payload = &rest.as_bytes()[colon + 2..];
    let toks: Vec<&[u8]> = ws_fields(payload).collect();
    let (maj, min) = crate::blkparse::parse_majmin(toks.first()?)?;
    let dev = kernel_dev(maj, min);
    // Skip a parenthesised command, which may contain spaces.
    let mut start = 2;
    if let Some(open) = toks.iter().position(|t| t.starts_with(b"(")) {
        let close = toks[open..].iter().position(|t| t.ends_with(b")"))? + open;
        start = close + 1;
    }
    let plus = toks.iter().skip(start).position(|t| *t == b"+")? + start;
    let sector = parse_u64(toks.get(plus.checked_sub(1)?)?, "sector").ok()?;
    let nr = parse_u64(toks.get(plus + 1)?, "nr_sector").ok()?;
    match name {
        "block_rq_issue" | "block_bio_queue" => Some(Event::Issue {
            t,
            dev,
            sector,
            nr,
            rwbs: Rwbs::new(toks.get(1)?),
        }),
        "block_rq_complete" | "block_bio_complete" => {
            let last = toks.last()?;
            let error = std::str::from_utf8(last)
                .ok()
                .and_then(|s| s.strip_prefix('[')?.strip_suffix(']')?.parse::<i64>().ok())
                .unwrap_or(0);
            Some(Event::Complete {
                t,
                dev,
                sector,
                nr,
                error,
            })
        }
        "block_rq_requeue" => Some(Event::Requeue { t, dev, sector }),
        _ => None,
    }
}

impl Recorder {
    /// Start recording the given block devices. Needs root and tracefs.
    pub fn start(devices: &[PathBuf], opts: &RecordOptions) -> Result<Recorder> {
        if devices.is_empty() {
            return Err(TraceError::Device {
                path: PathBuf::new(),
                msg: "no device given to record".into(),
            });
        }
        let mut devs = Vec::new();
        let mut bio = Vec::new();
        for p in devices {
            let (maj, min) = block_dev_numbers(p)?;
            devs.push(Device {
                id: kernel_dev(maj, min),
                name: p.display().to_string(),
            });
            bio.push(bio_based(maj, min));
        }
        let mut rec = Recorder {
            dir: PathBuf::new(),
            pipe: None,
            raw: None,
            bpf: None,
            bpf_unavailable: String::new(),
            matcher: Matcher::new(),
            t0: None,
            partial: Vec::new(),
            devices: devs,
            bio,
            finished_at_start: None,
            bpf_interval: Duration::ZERO,
            spool: None,
            events: 0,
            errors: 0,
            ignored: 0,
            requests: 0,
            completed: 0,
            clock: String::new(),
            started: Instant::now(),
            removed: true,
        };
        // Where `auto` leaves BPF: on request-based devices the BPF
        // programs on block_rq_complete miss a few completions in a
        // hundred thousand (loop devices, measured against the device's
        // own count; no recursion miss and no ring overrun is reported
        // for them), where tracefs records every one.
        let request_based = rec.bio.iter().any(|b| !b);
        if opts.recorder == RecorderKind::Auto && request_based {
            rec.bpf_unavailable = "a request-based device: BPF programs miss completions there, tracefs records them all".into();
        }
        if opts.recorder == RecorderKind::Bpf
            || (opts.recorder == RecorderKind::Auto && !request_based)
        {
            let ids: Vec<(u32, bool)> = rec
                .devices
                .iter()
                .zip(&rec.bio)
                .map(|(d, &b)| (d.id, b))
                .collect();
            // bpf_ktime_get_ns is CLOCK_MONOTONIC: time zero is now,
            // before any program runs.
            let t0 = drivelab_device::bpf::monotonic_ns();
            let per_cpu = bpf_records_per_cpu(opts.buffer_kb_per_cpu);
            match bpf::Source::start(&ids, per_cpu) {
                Ok(src) => {
                    rec.bpf = Some(src);
                    rec.bpf_interval = bpf_interval(per_cpu);
                    rec.t0 = Some(t0);
                    rec.clock = "mono".into();
                    rec.started = Instant::now();
                    rec.count_at_start();
                    return Ok(rec);
                }
                Err(e) if opts.recorder == RecorderKind::Bpf => return Err(e.into()),
                Err(e) => rec.bpf_unavailable = e.to_string(),
            }
        }
        let root = tracefs_root(opts)?;
        let n = INSTANCES.fetch_add(1, Ordering::Relaxed);
        let name = if n == 0 {
            format!("drivelab-{}", std::process::id())
        } else {
            format!("drivelab-{}-{n}", std::process::id())
        };
        let dir = root.join("instances").join(name);
        std::fs::create_dir(&dir).map_err(|e| tfs("cannot create instance", &dir, e))?;
        rec.dir = dir;
        rec.removed = false;
        // From here on, Drop removes the instance if anything fails.
        rec.configure(opts)?;
        rec.count_at_start();
        Ok(rec)
    }

    /// Take the devices' own count of finished requests, once the readers
    /// are live and every completion from before has been counted.
    fn count_at_start(&mut self) {
        std::thread::sleep(devstat::SETTLE);
        self.finished_at_start = devstat::finished_all(&self.devices);
    }

    fn configure(&mut self, opts: &RecordOptions) -> Result<()> {
        let d = self.dir.clone();
        write_file(
            &d.join("buffer_size_kb"),
            &opts.buffer_kb_per_cpu.to_string(),
        )?;
        let clocks = std::fs::read_to_string(d.join("trace_clock")).unwrap_or_default();
        if clocks
            .split_whitespace()
            .any(|c| c == "mono" || c == "[mono]")
        {
            write_file(&d.join("trace_clock"), "mono")?;
            self.clock = "mono".into();
        } else {
            self.clock = clocks
                .split_whitespace()
                .find(|c| c.starts_with('['))
                .map(|c| c.trim_matches(['[', ']']).to_string())
                .unwrap_or_else(|| "local".into());
        }
        for (ev, filter) in self.enabled() {
            let e = d.join("events/block").join(ev);
            if !e.is_dir() {
                if ev == "block_rq_requeue" {
                    continue;
                }
                return Err(tfs(
                    "missing tracepoint",
                    &e,
                    std::io::Error::new(
                        ErrorKind::NotFound,
                        "kernel built without block tracepoints",
                    ),
                ));
            }
            write_file(&e.join("filter"), &filter)?;
        }
        self.raw = if self.clock == "mono" {
            Raw::open(&d)
        } else {
            None
        };
        if self.raw.is_none() {
            let pipe_path = d.join("trace_pipe");
            let pipe = OpenOptions::new()
                .read(true)
                .custom_flags(libc::O_NONBLOCK)
                .open(&pipe_path)
                .map_err(|e| tfs("cannot open", &pipe_path, e))?;
            self.pipe = Some(pipe);
        }
        write_file(&d.join("tracing_on"), "1")?;
        let marker = d.join("trace_marker");
        let mut m = OpenOptions::new()
            .write(true)
            .open(&marker)
            .map_err(|e| tfs("cannot open", &marker, e))?;
        m.write_all(MARKER.as_bytes())
            .map_err(|e| tfs("cannot write", &marker, e))?;
        if let Some(r) = self.raw.as_mut() {
            r.marker_written = Instant::now();
        }
        for (ev, _) in self.enabled() {
            let e = d.join("events/block").join(ev).join("enable");
            if e.exists() {
                write_file(&e, "1")?;
            }
        }
        self.started = Instant::now();
        Ok(())
    }

    /// The events to enable, each with its filter: the request events for
    /// request-based devices, the bio events for bio-based ones.
    fn enabled(&self) -> Vec<(&'static str, String)> {
        let filter = |bio: bool| {
            self.devices
                .iter()
                .zip(&self.bio)
                .filter(|(_, &b)| b == bio)
                .map(|(d, _)| format!("dev == {}", d.id))
                .collect::<Vec<_>>()
                .join(" || ")
        };
        let mut out = Vec::new();
        for (events, bio) in [(&EVENTS[..], false), (&BIO_EVENTS[..], true)] {
            let f = filter(bio);
            if !f.is_empty() {
                out.extend(events.iter().map(|e| (*e, f.clone())));
            }
        }
        out
    }

    /// The tracefs instance directory (empty with the BPF recorder).
    pub fn instance(&self) -> &Path {
        &self.dir
    }

    /// Device table (ids are kernel `dev_t`s, names the paths given).
    pub fn devices(&self) -> &[Device] {
        &self.devices
    }

    /// Read what the kernel has buffered (without waiting) and return the
    /// requests that are complete in issue order. Call it often (every
    /// 10–100 ms) so the ring buffer does not overrun. While spooling
    /// ([`Recorder::spool_beside`]) it returns nothing: the requests come
    /// at the stop.
    pub fn poll(&mut self) -> Result<Vec<Request>> {
        self.drain(false)?;
        Ok(self.take_ready())
    }

    /// Write every request into `w` until `done()` says so, then stop and
    /// write what was left. The BPF rings are drained every
    /// [`bpf_interval`] (its reader sees every record that is there).
    /// tracefs's buffer is drained every 2 ms while events arrive (at once
    /// again when a drain found some), every 20 ms when idle or when
    /// reading the text pipe. (Draining every 20 ms lost
    /// 870,048 events of 1.76M requests on zram at about 175k IOPS though
    /// the buffer held far more than 20 ms: a non-blocking read of
    /// `trace_pipe_raw` can come back empty while events are still
    /// buffered, so a drain can stop short; frequent drains keep up.) Lost
    /// events are counted in the summary, not turned into an error: the
    /// caller decides what an incomplete recording means.
    pub fn record_into(
        mut self,
        w: &mut dyn crate::TraceWriter,
        mut done: impl FnMut() -> bool,
    ) -> Result<RecordSummary> {
        let mut priority = self.bpf.as_ref().and_then(|_| ReaderPriority::lower());
        loop {
            self.drain(false)?;
            self.emit_ready(&mut |r| w.write(&r))?;
            if done() {
                break;
            }
            if let Some(src) = &self.bpf {
                if let Some(p) = priority.as_mut() {
                    p.follow(src.fill);
                }
                std::thread::sleep(self.bpf_interval);
            } else if !self.busy() {
                let idle = if self.raw.is_some() { 2 } else { 20 };
                std::thread::sleep(Duration::from_millis(idle));
            }
        }
        drop(priority);
        self.finish(&mut |r| w.write(&r))
    }

    /// Copy what the kernel gives (BPF records, tracefs's binary pages)
    /// into a scratch file beside `output`
    /// ([`drivelab_device::output::Output::scratch`], checked as an output
    /// of `option` that none of the recorded devices may be) while
    /// recording, and decode, merge, match and hand out the requests only
    /// at the stop (see the module doc). Nothing with the text reader.
    pub fn spool_beside(&mut self, output: &Path, option: &str) -> Result<()> {
        if self.bpf.is_none() && self.raw.is_none() {
            return Ok(());
        }
        let file = drivelab_device::output::Output::new(output)
            .option(option)
            .inputs(self.devices.iter().map(|d| PathBuf::from(&d.name)))
            .scratch()?;
        self.spool = Some(Spool::new(file, output));
        Ok(())
    }

    /// Whether the last [`poll`](Recorder::poll) found events (the caller
    /// may poll again at once).
    pub fn busy(&self) -> bool {
        self.raw.as_ref().is_some_and(|r| r.last_bytes > 0)
            || self.bpf.as_ref().is_some_and(|b| b.last > 0)
    }

    /// Which reader is in use: `bpf`, `raw` or `text`.
    pub fn reader(&self) -> &'static str {
        if self.bpf.is_some() {
            "bpf"
        } else if self.raw.is_some() {
            "raw"
        } else {
            "text"
        }
    }

    /// Read what the kernel has; with `all`, release every event read
    /// (stopping), else only those older than the merge watermark.
    fn drain(&mut self, all: bool) -> Result<()> {
        if let Some(mut src) = self.bpf.take() {
            let r = match self.spool.as_mut() {
                Some(spool) => src.spool(all, spool),
                None => {
                    src.read(all, |ev| self.handle_event(ev));
                    Ok(())
                }
            };
            self.bpf = Some(src);
            return r;
        }
        if let Some(mut raw) = self.raw.take() {
            let r = raw.read(all, self.spool.as_mut());
            let mut events = std::mem::take(&mut raw.merge.ready);
            for ev in events.drain(..) {
                self.handle_event(ev);
            }
            // The emptied vector goes back, so the next drain reuses it.
            raw.merge.ready = events;
            self.raw = Some(raw);
            return r;
        }
        let mut buf = vec![0u8; 256 * 1024];
        while let Some(pipe) = self.pipe.as_mut() {
            match pipe.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => {
                    self.partial.extend_from_slice(&buf[..n]);
                    self.consume_lines();
                }
                Err(e) if e.kind() == ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == ErrorKind::Interrupted => continue,
                Err(e) => return Err(tfs("cannot read", &self.dir.join("trace_pipe"), e)),
            }
        }
        Ok(())
    }

    fn consume_lines(&mut self) {
        let data = std::mem::take(&mut self.partial);
        let mut start = 0;
        while let Some(p) = data[start..].iter().position(|c| *c == b'\n') {
            self.handle_line(&data[start..start + p]);
            start += p + 1;
        }
        self.partial = data[start..].to_vec();
    }

    fn rel(&mut self, t: u64) -> u64 {
        let t0 = *self.t0.get_or_insert(t);
        t.saturating_sub(t0)
    }

    fn handle_line(&mut self, line: &[u8]) {
        if let Some(ev) = parse_event(line) {
            self.handle_event(ev);
        }
    }

    fn handle_event(&mut self, ev: Event) {
        self.events += 1;
        match ev {
            Event::Marker { t } => {
                if self.t0.is_none() {
                    self.t0 = Some(t);
                }
            }
            Event::Issue {
                t,
                dev,
                sector,
                nr,
                rwbs,
            } => {
                let t = self.rel(t);
                // An empty preflush is the kernel's flush; any other empty
                // request or one past the largest offset is not a transfer
                // a reader would accept again: counted, not recorded.
                match parse_rwbs_sized(rwbs.as_bytes(), nr) {
                    Some((op, flags)) if (nr > 0 || op == Op::Flush) && recordable(sector, nr) => {
                        self.matcher.issue(t, dev, sector, nr, op, flags)
                    }
                    _ => self.ignored += 1,
                }
            }
            Event::Complete {
                t,
                dev,
                sector,
                nr,
                error,
            } => {
                let t = self.rel(t);
                if error != 0 {
                    self.errors += 1;
                }
                self.matcher.complete(t, dev, sector, nr);
            }
            Event::Requeue { t, dev, sector } => {
                let t = self.rel(t);
                self.matcher.requeue(t, dev, sector);
            }
        }
    }

    /// Hand `emit` the requests that are complete, in issue order.
    fn emit_ready(&mut self, emit: &mut dyn FnMut(Request) -> Result<()>) -> Result<()> {
        while let Some(r) = self.matcher.pop() {
            self.requests += 1;
            self.completed += u64::from(r.complete_ns.is_some());
            emit(r)?;
        }
        Ok(())
    }

    fn take_ready(&mut self) -> Vec<Request> {
        let mut out = Vec::new();
        let _ = self.emit_ready(&mut |r| {
            out.push(r);
            Ok(())
        });
        out
    }

    /// Read the spool back from its start and hand `emit` its requests,
    /// as the drains would have (see [`Recorder::spool_beside`]).
    fn unspool(&mut self, emit: &mut dyn FnMut(Request) -> Result<()>) -> Result<()> {
        let Some(spool) = self.spool.take() else {
            return Ok(());
        };
        let (mut bpf, mut raw) = (self.bpf.take(), self.raw.take());
        let r = spool.read_back(|item| {
            match (item, bpf.as_mut(), raw.as_mut()) {
                (Item::Chunk { cpu, bytes }, Some(src), _) => src.push_chunk(cpu, bytes),
                (Item::Chunk { cpu, bytes }, None, Some(raw)) => raw.push_page(cpu, bytes),
                (Item::Pass { mark }, Some(src), _) => {
                    src.release(mark, |ev| self.handle_event(ev))
                }
                (Item::Pass { mark }, None, Some(raw)) => {
                    raw.merge.release_each(mark, |ev| self.handle_event(ev))
                }
                (_, None, None) => {}
            }
            self.emit_ready(emit)
        });
        (self.bpf, self.raw) = (bpf, raw);
        r
    }

    fn lost_events(&self) -> Result<u64> {
        if let Some(src) = &self.bpf {
            return Ok(src.lost().map_err(BpfUnavailable::from)?);
        }
        let mut lost = 0;
        let Ok(rd) = std::fs::read_dir(self.dir.join("per_cpu")) else {
            return Ok(0);
        };
        for e in rd.flatten() {
            let Ok(s) = std::fs::read_to_string(e.path().join("stats")) else {
                continue;
            };
            for line in s.lines() {
                if let Some(v) = line
                    .strip_prefix("overrun:")
                    .or_else(|| line.strip_prefix("dropped events:"))
                {
                    lost += v.trim().parse::<u64>().unwrap_or(0);
                }
            }
        }
        Ok(lost)
    }

    fn disable(&self) {
        let _ = std::fs::write(self.dir.join("tracing_on"), "0");
        for ev in EVENTS.iter().chain(&BIO_EVENTS) {
            let _ = std::fs::write(self.dir.join("events/block").join(ev).join("enable"), "0");
        }
    }

    fn remove(&mut self) -> Result<()> {
        if self.removed {
            return Ok(());
        }
        self.bpf = None;
        self.disable();
        self.pipe = None;
        self.raw = None;
        // The kernel may briefly hold the instance busy after the pipe closes.
        let mut last = None;
        for _ in 0..50 {
            match std::fs::remove_dir(&self.dir) {
                Ok(()) => {
                    self.removed = true;
                    return Ok(());
                }
                Err(e) if e.kind() == ErrorKind::NotFound => {
                    self.removed = true;
                    return Ok(());
                }
                Err(e) => last = Some(e),
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        Err(tfs(
            "cannot remove instance",
            &self.dir,
            last.unwrap_or_else(|| std::io::Error::other("busy")),
        ))
    }

    /// Stop: disable the events, drain what is buffered, count lost events,
    /// remove the instance. Returns the remaining requests (everything still
    /// outstanding, without completion) and the summary.
    pub fn stop(self) -> Result<(Vec<Request>, RecordSummary)> {
        let mut out = Vec::new();
        let summary = self.finish(&mut |r| {
            out.push(r);
            Ok(())
        })?;
        Ok((out, summary))
    }

    /// [`Recorder::stop`], handing `emit` the requests left (all of them
    /// when spooled) instead of collecting them.
    fn finish(mut self, emit: &mut dyn FnMut(Request) -> Result<()>) -> Result<RecordSummary> {
        // The devices' count before anything is detached: all it counted
        // since the start ended while the readers were live.
        let device_finished = self
            .finished_at_start
            .zip(devstat::finished_all(&self.devices))
            .map(|(a, b)| b.saturating_sub(a));
        // Let in-flight completions land before turning tracing off.
        std::thread::sleep(Duration::from_millis(50));
        match self.bpf.as_mut() {
            Some(src) => src.detach(),
            None => {
                let _ = std::fs::write(self.dir.join("tracing_on"), "0");
            }
        }
        // A non-blocking read can come back empty while a CPU's buffer
        // still holds events: drain until two passes in a row find none.
        let mut empty = 0;
        while empty < 2 {
            self.drain(true)?;
            empty = if self.busy() { 0 } else { empty + 1 };
        }
        let duration_s = self.started.elapsed().as_secs_f64();
        self.unspool(emit)?;
        self.emit_ready(emit)?;
        if !self.partial.is_empty() {
            let rest = std::mem::take(&mut self.partial);
            self.handle_line(&rest);
        }
        self.matcher.finish();
        self.emit_ready(emit)?;
        // Completions seen: those matched to a recorded issue and those of
        // requests issued before the start (or left out).
        let seen = self.completed + self.matcher.stats().unmatched_completions;
        let missed = device_finished.map_or(0, |d| d.saturating_sub(seen));
        let lost = self.lost_events()? + missed;
        let summary = RecordSummary {
            requests: self.requests,
            completed: self.completed,
            lost_events: lost,
            device_finished,
            missed_completions: missed,
            events: self.events,
            errors: self.errors,
            matching: ReadStats {
                ignored: self.matcher.stats().ignored + self.ignored,
                ..self.matcher.stats()
            },
            duration_s,
            clock: self.clock.clone(),
            instance: self.dir.clone(),
            reader: self.reader().into(),
            bpf_unavailable: self.bpf_unavailable.clone(),
            bpf_programs: self
                .bpf
                .as_ref()
                .map(|b| b.access.name().to_string())
                .unwrap_or_default(),
        };
        self.remove()?;
        Ok(summary)
    }
}

impl Drop for Recorder {
    fn drop(&mut self) {
        let _ = self.remove();
    }
}

/// Record `devices` into `output` (format `format`, usually
/// [`Format::Native`]) until `duration` has passed (if given) or `stop` is
/// set (e.g. by a SIGINT handler), draining as
/// [`Recorder::record_into`] does. The trace is written in full either
/// way; if the kernel lost any event the result is
/// [`TraceError::LostEvents`] with the count, and if the devices finished
/// requests whose completions never reached the trace,
/// [`TraceError::MissedCompletions`].
pub fn record(
    devices: &[PathBuf],
    output: &Path,
    format: Format,
    duration: Option<Duration>,
    stop: &AtomicBool,
    opts: &RecordOptions,
) -> Result<RecordSummary> {
    let mut rec = Recorder::start(devices, opts)?;
    let mut file = drivelab_device::output::Output::new(output)
        .option("--output")
        .inputs(devices.iter().cloned())
        .create()?;
    rec.spool_beside(output, "--output")?;
    let mut w = crate::open_writer(&mut file, format, rec.devices())?;
    let deadline = duration.map(|d| Instant::now() + d);
    let summary = rec.record_into(w.as_mut(), || {
        stop.load(Ordering::Relaxed) || deadline.is_some_and(|d| Instant::now() >= d)
    })?;
    w.finish()?;
    drop(w);
    file.commit()?;
    if summary.lost_events > summary.missed_completions {
        return Err(TraceError::LostEvents {
            lost: summary.lost_events,
            requests: summary.requests,
            buffer_kb: opts.buffer_kb_per_cpu,
        });
    }
    if summary.missed_completions > 0 {
        return Err(TraceError::MissedCompletions {
            missed: summary.missed_completions,
            finished: summary.device_finished.unwrap_or(0),
            reader: summary.reader.clone(),
        });
    }
    Ok(summary)
}

// ---------------------------------------------------------------- raw pages

/// `RB_MISSED_EVENTS | RB_MISSED_STORED` in a page's commit word.
const RB_MISSED_FLAGS: u64 = (1 << 31) | (1 << 30);

/// Where the fields the recorder needs sit in one event's record.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
struct Fields {
    id: u16,
    dev: usize,
    sector: usize,
    nr_sector: usize,
    /// `rwbs` (issue) or `error` (complete); unused for a requeue.
    extra: usize,
    extra_len: usize,
}

/// The binary layout: page header and the block events' fields.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
struct Layout {
    /// Offset of the data in a page, and the page's size.
    data: usize,
    page: usize,
    issue: Fields,
    complete: Fields,
    requeue: Option<Fields>,
    bio_queue: Option<Fields>,
    bio_complete: Option<Fields>,
    print: u16,
}

/// `(offset, size)` of `name` in an event `format` file.
fn field(format: &str, name: &str) -> Option<(usize, usize)> {
    format.lines().find_map(|l| {
        let decl = l.trim().strip_prefix("field:")?;
        let (decl, rest) = decl.split_once(';')?;
        let ident = decl
            .trim_end_matches(|c: char| c == ']' || c.is_ascii_digit())
            .trim_end_matches('[')
            .rsplit(|c: char| c.is_whitespace() || c == '*')
            .next()?;
        if ident != name {
            return None;
        }
        let num = |key: &str| -> Option<usize> {
            let v = rest.split(';').find_map(|p| p.trim().strip_prefix(key))?;
            v.trim().parse().ok()
        };
        Some((num("offset:")?, num("size:")?))
    })
}

fn event_id(format: &str) -> Option<u16> {
    format
        .lines()
        .find_map(|l| l.strip_prefix("ID:"))
        .and_then(|v| v.trim().parse().ok())
}

impl Layout {
    /// Read from the `header_page` text and the events' `format` texts;
    /// `None` when any is missing or not the shape this reader knows.
    fn parse(
        header_page: &str,
        issue: &str,
        complete: &str,
        requeue: Option<&str>,
        bio: Option<(&str, &str)>,
        print: &str,
    ) -> Option<Layout> {
        let (ts_off, ts_size) = field(header_page, "timestamp")?;
        let (commit_off, commit_size) = field(header_page, "commit")?;
        let (data, data_size) = field(header_page, "data")?;
        if (ts_off, ts_size, commit_off, commit_size) != (0, 8, 8, 8) || data != 16 {
            return None;
        }
        let block = |f: &str, extra: &str| -> Option<Fields> {
            let (dev, ds) = field(f, "dev")?;
            let (sector, ss) = field(f, "sector")?;
            let (nr_sector, ns) = field(f, "nr_sector")?;
            let (x, xl) = field(f, extra)?;
            (ds == 4 && ss == 8 && ns == 4).then_some(Fields {
                id: event_id(f)?,
                dev,
                sector,
                nr_sector,
                extra: x,
                extra_len: xl,
            })
        };
        let complete = block(complete, "error")?;
        if complete.extra_len != 4 {
            return None;
        }
        let bio_complete = bio
            .and_then(|(_, c)| block(c, "error"))
            .filter(|c| c.extra_len == 4);
        Some(Layout {
            data,
            page: data + data_size,
            issue: block(issue, "rwbs")?,
            complete,
            requeue: requeue.and_then(|f| block(f, "dev").map(|b| Fields { extra_len: 0, ..b })),
            bio_queue: bio.and_then(|(q, _)| block(q, "rwbs")),
            bio_complete,
            print: event_id(print)?,
        })
    }

    /// Decode one page read from `trace_pipe_raw`, appending its events.
    /// Returns whether the kernel flagged events missed before it.
    fn page(&self, page: &[u8], out: &mut Vec<Event>) -> bool {
        let rd = |b: &[u8], at: usize, n: usize| -> Option<u64> {
            let s = b.get(at..at + n)?;
            let mut v = [0u8; 8];
            v[..n].copy_from_slice(s);
            Some(u64::from_le_bytes(v))
        };
        let (Some(mut ts), Some(commit)) = (rd(page, 0, 8), rd(page, 8, 8)) else {
            return false;
        };
        let missed = commit & RB_MISSED_FLAGS != 0;
        let len = (commit & !RB_MISSED_FLAGS & 0xffff_ffff) as usize;
        let end = (self.data + len).min(page.len());
        let mut at = self.data;
        while at + 4 <= end {
            let Some(h) = rd(page, at, 4) else { break };
            let type_len = (h & 0x1f) as u32;
            let delta = h >> 5;
            let array0 = rd(page, at + 4, 4);
            let (body, next) = match type_len {
                29 => {
                    // Padding; with no delta the rest of the page is empty.
                    if delta == 0 {
                        break;
                    }
                    ts += delta;
                    let Some(a) = array0 else { break };
                    at += 4 + a as usize;
                    continue;
                }
                30 => {
                    let Some(a) = array0 else { break };
                    ts += (a << 27) + delta;
                    at += 8;
                    continue;
                }
                31 => {
                    let Some(a) = array0 else { break };
                    ts = (ts & !((1u64 << 59) - 1)) | ((a << 27) + delta);
                    at += 8;
                    continue;
                }
                0 => {
                    let Some(a) = array0 else { break };
                    let n = (a as usize).saturating_sub(4);
                    (at + 8..at + 8 + n, at + 8 + ((n + 3) & !3))
                }
                n => (at + 4..at + 4 + n as usize * 4, at + 4 + n as usize * 4),
            };
            ts += delta;
            if body.end > end {
                break;
            }
            if let Some(ev) = self.event(ts, &page[body]) {
                out.push(ev);
            }
            at = next;
        }
        missed
    }

    fn event(&self, t: u64, rec: &[u8]) -> Option<Event> {
        let u = |at: usize, n: usize| -> Option<u64> {
            let s = rec.get(at..at + n)?;
            let mut v = [0u8; 8];
            v[..n].copy_from_slice(s);
            Some(u64::from_le_bytes(v))
        };
        let id = u(0, 2)? as u16;
        let block = |f: &Fields| -> Option<(u32, u64, u64)> {
            Some((u(f.dev, 4)? as u32, u(f.sector, 8)?, u(f.nr_sector, 4)?))
        };
        let issue = [Some(self.issue), self.bio_queue]
            .into_iter()
            .flatten()
            .find(|f| f.id == id);
        let complete = [Some(self.complete), self.bio_complete]
            .into_iter()
            .flatten()
            .find(|f| f.id == id);
        if let Some(f) = issue.as_ref() {
            let (dev, sector, nr) = block(f)?;
            let raw = rec.get(f.extra..f.extra + f.extra_len)?;
            let n = raw.iter().position(|&c| c == 0).unwrap_or(raw.len());
            Some(Event::Issue {
                t,
                dev,
                sector,
                nr,
                rwbs: Rwbs::new(&raw[..n]),
            })
        } else if let Some(f) = complete.as_ref() {
            let (dev, sector, nr) = block(f)?;
            let error = i64::from(u(f.extra, 4)? as u32 as i32);
            Some(Event::Complete {
                t,
                dev,
                sector,
                nr,
                error,
            })
        } else if self.requeue.is_some_and(|r| r.id == id) {
            let (dev, sector, _) = block(self.requeue.as_ref()?)?;
            Some(Event::Requeue { t, dev, sector })
        } else if id == self.print {
            let m = MARKER.as_bytes();
            rec.windows(m.len())
                .any(|w| w == m)
                .then_some(Event::Marker { t })
        } else {
            None
        }
    }
}

/// A tracefs text file in one read: `header_page` answers only the first
/// read(2) (a second, at a non-zero offset, returns nothing), so the small
/// probe read `read_to_string` starts with would cut it at 32 bytes.
fn read_whole(path: &Path) -> std::io::Result<String> {
    let mut buf = vec![0u8; 64 * 1024];
    let mut f = File::open(path)?;
    let mut n = 0;
    loop {
        match f.read(&mut buf[n..]) {
            Ok(0) => break,
            Ok(k) => {
                n += k;
                if n == buf.len() {
                    break;
                }
            }
            Err(e) if e.kind() == ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        }
    }
    buf.truncate(n);
    String::from_utf8(buf).map_err(|e| std::io::Error::new(ErrorKind::InvalidData, e))
}

/// The binary reader: one non-blocking `trace_pipe_raw` per CPU.
struct Raw {
    layout: Layout,
    /// The instance's `per_cpu` directory (for errors).
    per_cpu: PathBuf,
    cpus: Vec<File>,
    /// Events read per CPU, merged in time order for the matcher.
    merge: merge::Merge,
    page: Vec<u8>,
    scratch: Vec<Event>,
    /// Bytes read by the last drain.
    last_bytes: usize,
    /// When the start marker was written (set by the recorder).
    marker_written: Instant,
    /// The marker's trace time and `marker_written`, once read: maps the
    /// wall clock onto the trace clock for the watermark.
    marker: Option<(u64, Instant)>,
}

impl Raw {
    fn open(dir: &Path) -> Option<Raw> {
        let root = dir.parent()?.parent()?;
        let rd = |p: PathBuf| read_whole(&p).ok();
        let ev = |name: &str| rd(root.join("events/block").join(name).join("format"));
        let bio = ev("block_bio_queue").zip(ev("block_bio_complete"));
        let layout = Layout::parse(
            &rd(root.join("events/header_page"))?,
            &ev("block_rq_issue")?,
            &ev("block_rq_complete")?,
            ev("block_rq_requeue").as_deref(),
            bio.as_ref().map(|(q, c)| (q.as_str(), c.as_str())),
            &rd(root.join("events/ftrace/print/format"))?,
        )?;
        let mut cpus = Vec::new();
        let mut names: Vec<(u32, PathBuf)> = std::fs::read_dir(dir.join("per_cpu"))
            .ok()?
            .flatten()
            .filter_map(|e| {
                let n = e.file_name().to_str()?.strip_prefix("cpu")?.parse().ok()?;
                Some((n, e.path().join("trace_pipe_raw")))
            })
            .collect();
        names.sort();
        for (_, p) in names {
            cpus.push(
                OpenOptions::new()
                    .read(true)
                    .custom_flags(libc::O_NONBLOCK)
                    .open(p)
                    .ok()?,
            );
        }
        if cpus.is_empty() {
            return None;
        }
        Some(Raw {
            per_cpu: dir.join("per_cpu"),
            merge: merge::Merge::default(),
            page: vec![0u8; layout.page],
            cpus,
            layout,
            scratch: Vec::new(),
            last_bytes: 0,
            marker_written: Instant::now(),
            marker: None,
        })
    }

    /// Drain every CPU, then release the events older than the watermark
    /// (all of them with `all`) into `merge.ready`, in time order. With a
    /// `spool`, the pages go there as they are, with the watermark, and
    /// nothing is released (see [`Recorder::spool_beside`]); they are
    /// parsed only until the start marker is found.
    fn read(&mut self, all: bool, mut spool: Option<&mut Spool>) -> Result<()> {
        // The trace clock now: the start marker's time plus the wall time
        // since it was written (None until the marker has been read).
        let drained_at = self
            .marker
            .map(|(t, at)| t + at.elapsed().as_nanos() as u64);
        self.last_bytes = 0;
        for (i, f) in self.cpus.iter_mut().enumerate() {
            loop {
                match f.read(&mut self.page) {
                    Ok(0) => break,
                    Ok(n) => {
                        let page = &self.page[..n];
                        self.last_bytes += n;
                        if spool.is_none() || self.marker.is_none() {
                            self.scratch.clear();
                            self.layout.page(page, &mut self.scratch);
                        }
                        if self.marker.is_none() {
                            if let Some(t) = self.scratch.iter().find_map(|e| match e {
                                Event::Marker { t } => Some(*t),
                                _ => None,
                            }) {
                                self.marker = Some((t, self.marker_written));
                            }
                        }
                        match spool.as_mut() {
                            Some(spool) => spool.chunk(i, page),
                            None => {
                                for e in self.scratch.drain(..) {
                                    self.merge.push(i, e);
                                }
                            }
                        }
                    }
                    Err(e) if e.kind() == ErrorKind::WouldBlock => break,
                    Err(e) if e.kind() == ErrorKind::Interrupted => continue,
                    // A CPU taken offline: nothing more from it.
                    Err(e) if e.raw_os_error() == Some(libc::ENODEV) => break,
                    Err(e) => return Err(tfs("cannot read", &self.per_cpu, e)),
                }
            }
        }
        let mark = match (all, drained_at) {
            (true, _) => u64::MAX,
            (false, Some(t)) => t.saturating_sub(merge::WATERMARK_NS),
            (false, None) => 0,
        };
        match spool {
            Some(spool) => spool.pass(mark),
            None => {
                self.merge.release(mark);
                Ok(())
            }
        }
    }

    /// Hold the events of a spooled page of `cpu`'s.
    fn push_page(&mut self, cpu: usize, page: &[u8]) {
        self.scratch.clear();
        self.layout.page(page, &mut self.scratch);
        for e in self.scratch.drain(..) {
            self.merge.push(cpu, e);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The reader drops to nice 19, returns to its own priority when a
    /// ring is a quarter full and drops again once caught up, and leaves
    /// its thread as it found it (where raising back is allowed).
    #[test]
    fn the_bpf_reader_yields_until_it_falls_behind() {
        use drivelab_engine::sched::thread_nice;
        std::thread::spawn(|| {
            let own = thread_nice().unwrap();
            let Some(mut p) = ReaderPriority::lower() else {
                return;
            };
            assert_eq!(thread_nice().unwrap(), 19);
            p.follow(0.1);
            assert_eq!(thread_nice().unwrap(), 19);
            p.follow(0.3);
            assert_eq!(thread_nice().unwrap(), own);
            p.follow(0.1);
            assert_eq!(thread_nice().unwrap(), own);
            p.follow(0.01);
            assert_eq!(thread_nice().unwrap(), 19);
            drop(p);
            assert_eq!(thread_nice().unwrap(), own);
        })
        .join()
        .unwrap();
    }

    #[test]
    fn the_bpf_reader_sleeps_an_eighth_of_what_its_ring_holds() {
        let per_s = EXPECTED_IOPS * 2;
        // A ring that holds a second: the 20 ms cap.
        assert_eq!(bpf_interval(per_s), Duration::from_millis(20));
        // 80 ms of events: 10 ms.
        assert_eq!(bpf_interval(per_s * 8 / 100), Duration::from_millis(10));
        // A tiny ring: no less than 1 ms.
        assert_eq!(bpf_interval(4096), Duration::from_millis(1));
        // The default buffer: each CPU's ring holds what that CPU's
        // tracefs buffer would, in two records a request, 20 ms apart.
        let per_cpu = bpf_records_per_cpu(default_buffer_kb());
        assert_eq!(per_cpu, default_buffer_kb() * 1024 / BYTES_PER_REQUEST * 2);
        assert_eq!(bpf_interval(per_cpu), Duration::from_millis(20));
    }

    #[test]
    fn parses_6_18_lines() {
        let issue = b"              dd-16044   [001] .....   807.544567: block_rq_issue: 7,0 WS 4096 () 24 + 8 be,0,4 [dd]";
        assert_eq!(
            parse_event(issue),
            Some(Event::Issue {
                t: 807_544_567_000,
                dev: kernel_dev(7, 0),
                sector: 24,
                nr: 8,
                rwbs: Rwbs::new(b"WS")
            })
        );
        let done = b"     ksoftirqd/1-22      [001] ..s..   807.544621: block_rq_complete: 7,0 WS () 24 + 8 be,0,4 [0]";
        assert_eq!(
            parse_event(done),
            Some(Event::Complete {
                t: 807_544_621_000,
                dev: kernel_dev(7, 0),
                sector: 24,
                nr: 8,
                error: 0
            })
        );
    }

    /// The 6.18 kernel's format files (trimmed to the field lines).
    const HEADER_PAGE: &str = "\tfield: u64 timestamp;\toffset:0;\tsize:8;\tsigned:0;\n\tfield: local_t commit;\toffset:8;\tsize:8;\tsigned:1;\n\tfield: int overwrite;\toffset:8;\tsize:1;\tsigned:1;\n\tfield: char data;\toffset:16;\tsize:4080;\tsigned:0;\n";
    const ISSUE: &str = "name: block_rq_issue\nID: 2104\nformat:\n\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n\tfield:dev_t dev;\toffset:8;\tsize:4;\tsigned:0;\n\tfield:sector_t sector;\toffset:16;\tsize:8;\tsigned:0;\n\tfield:unsigned int nr_sector;\toffset:24;\tsize:4;\tsigned:0;\n\tfield:unsigned int bytes;\toffset:28;\tsize:4;\tsigned:0;\n\tfield:unsigned short ioprio;\toffset:32;\tsize:2;\tsigned:0;\n\tfield:char rwbs[10];\toffset:34;\tsize:10;\tsigned:0;\n\tfield:char comm[16];\toffset:44;\tsize:16;\tsigned:0;\n\tfield:__data_loc char[] cmd;\toffset:60;\tsize:4;\tsigned:0;\n";
    const COMPLETE: &str = "name: block_rq_complete\nID: 2107\nformat:\n\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n\tfield:dev_t dev;\toffset:8;\tsize:4;\tsigned:0;\n\tfield:sector_t sector;\toffset:16;\tsize:8;\tsigned:0;\n\tfield:unsigned int nr_sector;\toffset:24;\tsize:4;\tsigned:0;\n\tfield:int error;\toffset:28;\tsize:4;\tsigned:1;\n\tfield:unsigned short ioprio;\toffset:32;\tsize:2;\tsigned:0;\n\tfield:char rwbs[10];\toffset:34;\tsize:10;\tsigned:0;\n\tfield:__data_loc char[] cmd;\toffset:44;\tsize:4;\tsigned:0;\n";
    const PRINT: &str = "name: print\nID: 5\nformat:\n\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n\tfield:unsigned long ip;\toffset:8;\tsize:8;\tsigned:0;\n\tfield:char buf[];\toffset:16;\tsize:0;\tsigned:0;\n";

    fn layout() -> Layout {
        Layout::parse(HEADER_PAGE, ISSUE, COMPLETE, None, None, PRINT).expect("6.18 layout")
    }

    /// A record of `len` bytes with `common_type` `id`.
    fn record(id: u16, len: usize) -> Vec<u8> {
        let mut r = vec![0u8; len];
        r[..2].copy_from_slice(&id.to_le_bytes());
        r
    }

    fn header(type_len: u32, delta: u32) -> [u8; 4] {
        (type_len | (delta << 5)).to_le_bytes()
    }

    #[test]
    fn format_files_give_the_field_offsets() {
        let l = layout();
        assert_eq!((l.data, l.page), (16, 4096));
        assert_eq!(
            (l.issue.id, l.issue.dev, l.issue.sector, l.issue.nr_sector),
            (2104, 8, 16, 24)
        );
        assert_eq!((l.issue.extra, l.issue.extra_len), (34, 10));
        assert_eq!((l.complete.id, l.complete.extra, l.print), (2107, 28, 5));
        // A layout this reader does not know is refused (text is read then).
        assert!(Layout::parse(
            &HEADER_PAGE.replace("offset:16", "offset:24"),
            ISSUE,
            COMPLETE,
            None,
            None,
            PRINT
        )
        .is_none());
    }

    #[test]
    fn a_binary_page_decodes_with_time_deltas_extends_and_padding() {
        let l = layout();
        let dev = kernel_dev(7, 3);
        let mut issue = record(2104, 64);
        issue[8..12].copy_from_slice(&dev.to_le_bytes());
        issue[16..24].copy_from_slice(&2048u64.to_le_bytes());
        issue[24..28].copy_from_slice(&8u32.to_le_bytes());
        issue[34..36].copy_from_slice(b"RA");
        let mut done = record(2107, 48);
        done[8..12].copy_from_slice(&dev.to_le_bytes());
        done[16..24].copy_from_slice(&2048u64.to_le_bytes());
        done[24..28].copy_from_slice(&8u32.to_le_bytes());
        done[28..32].copy_from_slice(&(-5i32).to_le_bytes());
        let mut marker = record(5, 16);
        marker.extend_from_slice(MARKER.as_bytes());
        while marker.len() % 4 != 0 {
            marker.push(0);
        }
        let mut data = Vec::new();
        // Marker, length in array[0] (type_len 0), 100 ns after the page's time.
        data.extend_from_slice(&header(0, 100));
        data.extend_from_slice(&(marker.len() as u32 + 4).to_le_bytes());
        data.extend_from_slice(&marker);
        // Issue, 16 words (type_len 16), 50 ns later.
        data.extend_from_slice(&header(16, 50));
        data.extend_from_slice(&issue);
        // Padding of 12 bytes (array[0] counts itself and what follows)
        // with a 10 ns delta: a discarded event.
        data.extend_from_slice(&header(29, 10));
        data.extend_from_slice(&8u32.to_le_bytes());
        data.extend_from_slice(&[0; 4]);
        // Time extend: + (1 << 27) + 3 ns.
        data.extend_from_slice(&header(30, 3));
        data.extend_from_slice(&1u32.to_le_bytes());
        // Completion, 12 words, 7 ns after that.
        data.extend_from_slice(&header(12, 7));
        data.extend_from_slice(&done);
        let mut page = vec![0u8; 4096];
        page[..8].copy_from_slice(&1_000_000u64.to_le_bytes());
        page[8..16].copy_from_slice(&(data.len() as u64).to_le_bytes());
        page[16..16 + data.len()].copy_from_slice(&data);
        let mut out = Vec::new();
        assert!(!l.page(&page, &mut out));
        let t_issue = 1_000_000 + 100 + 50;
        let t_done = t_issue + 10 + (1 << 27) + 3 + 7;
        assert_eq!(
            out,
            vec![
                Event::Marker { t: 1_000_100 },
                Event::Issue {
                    t: t_issue,
                    dev,
                    sector: 2048,
                    nr: 8,
                    rwbs: Rwbs::new(b"RA")
                },
                Event::Complete {
                    t: t_done,
                    dev,
                    sector: 2048,
                    nr: 8,
                    error: -5
                },
            ]
        );
        // The kernel's missed-events flag is reported.
        page[8..16].copy_from_slice(&((data.len() as u64) | (1 << 31)).to_le_bytes());
        out.clear();
        assert!(l.page(&page, &mut out));
        assert_eq!(out.len(), 3);
    }

    #[test]
    fn the_running_kernels_layout_is_known() {
        let root = Path::new("/sys/kernel/tracing");
        let rd = |p: &str| read_whole(&root.join(p)).unwrap();
        if !root.join("events/header_page").exists() {
            return;
        }
        let l = Layout::parse(
            &rd("events/header_page"),
            &rd("events/block/block_rq_issue/format"),
            &rd("events/block/block_rq_complete/format"),
            None,
            Some((
                &rd("events/block/block_bio_queue/format"),
                &rd("events/block/block_bio_complete/format"),
            )),
            &rd("events/ftrace/print/format"),
        );
        let l = l.unwrap_or_else(|| panic!("{}", rd("events/header_page")));
        assert!(l.bio_queue.is_some() && l.bio_complete.is_some());
    }

    #[test]
    fn the_default_buffer_holds_a_second_at_the_expected_rate() {
        let cpus = std::thread::available_parallelism()
            .map(|n| n.get() as u64)
            .unwrap_or(1);
        let kb = default_buffer_kb();
        assert!(kb >= 16_384);
        assert!(kb * 1024 * cpus >= EXPECTED_IOPS * HOLD_S * BYTES_PER_REQUEST);
    }

    #[test]
    fn parses_older_kernel_lines_and_passthrough_commands() {
        // 4.x: no ioprio field; a SCSI command in parentheses with spaces.
        let issue = b"  kworker/0:1H-300 [000] ....  12.000001: block_rq_issue: 8,0 R 4096 (28 00 00 00 00 08 00 00 08 00) 8 + 8 [kworker/0:1H]";
        match parse_event(issue) {
            Some(Event::Issue { sector, nr, .. }) => assert_eq!((sector, nr), (8, 8)),
            other => panic!("{other:?}"),
        }
        let done = b"  <idle>-0 [000] d.h. 12.000100: block_rq_complete: 8,0 R () 8 + 8 [-5]";
        match parse_event(done) {
            Some(Event::Complete { error, .. }) => assert_eq!(error, -5),
            other => panic!("{other:?}"),
        }
        let marker = b"  x-1 [000] ..... 5.000000: tracing_mark_write: drivelab-record-start";
        assert_eq!(
            parse_event(marker),
            Some(Event::Marker { t: 5_000_000_000 })
        );
        assert_eq!(parse_event(b"# tracer: nop"), None);
        assert_eq!(parse_event(b"garbage: block_rq_issue: x"), None);
    }
}

//! A whole `trace replay`: read the trace once, into a [`Spool`] that sizes
//! the replay and that the replay then plays from, check and open the target, optionally record the replay at the block layer
//! while it plays (the IPEAK audit: compare the recording with the
//! original), play it, and report.
//!
//! Every check that can refuse runs before the target is opened for
//! writing: the trace must hold requests, the target must exist and be big
//! enough for the largest request, and a trace that writes or trims passes
//! the safety check of a block device target (`force` overrides what it
//! can).

use std::borrow::Cow;
use std::fmt;
use std::os::unix::fs::FileTypeExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use drivelab_device::blockdev::BlockDevice;
use drivelab_device::claim::{Claim, ClaimError, ClaimOptions, Consent};
use drivelab_engine::buf::Fill;
use drivelab_engine::engine::{Target, Uring};
use drivelab_trace::compare::Criterion;
use drivelab_trace::record::{RecordOptions, RecordSummary, Recorder};
use drivelab_trace::{Format, ReadOptions, TraceError};
use serde::{Deserialize, Serialize};

use crate::spool::{Spool, SpoolError, SpoolOptions};
use crate::{prepass, Remap, ReplayError, ReplayOptions, ReplayReport, Timing};

/// What to replay, where and how.
#[derive(Debug, Clone)]
pub struct SessionOptions {
    /// The trace to play.
    pub trace: PathBuf,
    /// Its format; `None` detects it from the content.
    pub format: Option<Format>,
    /// How the trace is read (lenient, blkparse Q events).
    pub read: ReadOptions,
    /// The device or file to play it on.
    pub target: PathBuf,
    /// Timing: dependency (the default for scores), original (with a speed
    /// above 0), no-stall or closed loop.
    pub timing: Timing,
    /// Requests in flight at most (the closed loop's depth); at least 1.
    pub depth: u32,
    /// Placement of offsets beyond the target.
    pub remap: Remap,
    /// Record the replay as it plays into this file (native format; block
    /// device targets only).
    pub record: Option<PathBuf>,
    /// Write to a block device the safety checks refuse, except a read-only
    /// one or one the running system uses.
    pub force: bool,
    /// Where the replay's counters are copied as it runs (live metrics).
    pub progress: Option<std::sync::Arc<crate::Progress>>,
    /// How much of the parsed trace is kept in memory, and where the rest
    /// is spooled.
    pub spool: SpoolOptions,
}

/// What a session did: the replay's figures, and the recording's summary.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct SessionReport {
    /// The replay.
    #[serde(flatten)]
    pub replay: ReplayReport,
    /// The target, as given.
    pub target: String,
    /// Requests the replay read back from the spool file: the part of the
    /// trace beyond the in-memory bound ([`SpoolOptions::mem_bytes`]).
    pub spooled: u64,
    /// The trace, as given.
    pub trace: String,
    /// The recording of the replay, when one was asked for.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub record: Option<RecordSummary>,
    /// With a recording: whether the target was quiet (nothing in flight,
    /// no I/O for 150 ms) when the recording began; `false` after 5 s of
    /// waiting for it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub quiet_before_recording: Option<bool>,
    /// The write claim when the trace writes: the safety assessment made
    /// before the first write and how the target was held.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[serde(deserialize_with = "drivelab_report::metrics::or_default")]
    pub claim: Option<drivelab_device::claim::ClaimRecord>,
    /// Where the recording went.
    #[serde(skip)]
    pub record_path: Option<PathBuf>,
}

/// Why a session did not run to its report.
#[derive(Debug, thiserror::Error)]
pub enum SessionError {
    /// What was asked cannot be done (an empty or unreadable trace, a
    /// missing or too small target, a bad option); nothing was written.
    #[error("{0}")]
    Input(String),
    /// The target could not be claimed for writing (refused by the safety
    /// assessment, held by another process); nothing was written.
    #[error(transparent)]
    Unsafe(ClaimError),
    /// io_uring could not be set up.
    #[error("cannot set up io_uring: {0}")]
    Engine(std::io::Error),
    /// Reading the trace again, or recording, failed.
    #[error(transparent)]
    Trace(#[from] TraceError),
    /// The recording file is refused, or cannot be created or put in
    /// place.
    #[error(transparent)]
    Recording(#[from] drivelab_device::output::OutputError),
    /// The thread that drains the recorder panicked.
    #[error("the recorder thread panicked")]
    RecorderPanicked,
    /// The replay failed.
    #[error(transparent)]
    Replay(#[from] ReplayError),
}

impl SessionError {
    /// Whether the request was refused before anything was written.
    pub fn is_input(&self) -> bool {
        matches!(self, SessionError::Input(_) | SessionError::Unsafe(_))
            || matches!(self, SessionError::Recording(e) if e.is_refusal())
    }
}

/// The target as the replay sees it.
struct TargetFacts {
    /// Kernel name of a block device.
    name: Option<String>,
    size: u64,
    logical_block: u64,
    is_block: bool,
}

/// Run a session: open the trace, prepass it, check and open the target,
/// start the recorder if asked, replay (until done or `stop`), and report.
pub fn run(o: &SessionOptions, stop: &AtomicBool) -> Result<SessionReport, SessionError> {
    if let Timing::Original { speed } | Timing::Gaps { speed } = o.timing {
        if !(speed > 0.0 && speed.is_finite()) {
            return Err(SessionError::Input(format!(
                "--speed must be above 0, not {speed}"
            )));
        }
    }
    let (_, reader) = drivelab_trace::open_file(&o.trace, o.format, o.read)
        .map_err(|e| SessionError::Input(e.to_string()))?;
    let spool = Spool::build(reader, &o.spool).map_err(|e| match e {
        SpoolError::Trace(e) => SessionError::Input(format!("{}: {e}", o.trace.display())),
        e => SessionError::Input(e.to_string()),
    })?;
    let pre = prepass(spool.iter())?;
    if pre.requests == 0 {
        return Err(SessionError::Input(format!(
            "{} holds no requests to replay",
            o.trace.display()
        )));
    }
    let t = target_facts(&o.target)?;
    if t.size < pre.max_len.max(t.logical_block) {
        return Err(SessionError::Input(format!(
            "{} ({} bytes) is smaller than the trace's largest request ({} bytes)",
            o.target.display(),
            t.size,
            pre.max_len
        )));
    }
    if o.record.is_some() && !t.is_block {
        return Err(SessionError::Input(
            "--record needs a block device target (it records at the block layer)".into(),
        ));
    }
    // A trace that writes needs the target claimed (the safety assessment,
    // --force, an exclusive hold for the whole replay); one that only reads
    // opens it read-only.
    let claim = if pre.modifying > 0 {
        let consent = Consent {
            force: o.force,
            confirm: None,
        };
        let opts = ClaimOptions {
            direct: true,
            create_size: None,
        };
        Some(Claim::open(&o.target, &consent, &opts).map_err(SessionError::Unsafe)?)
    } else {
        None
    };
    let target = match &claim {
        Some(c) => Target::claimed(c, true),
        None => Target::read_only(&o.target, true),
    }
    .map_err(|e| SessionError::Input(format!("cannot open {}: {e}", o.target.display())))?;
    let lb = t.logical_block;
    let max_len = pre.max_len.div_ceil(lb) * lb;
    let mut engine = Uring::new(
        vec![target],
        o.depth.max(1),
        max_len.max(lb) as usize,
        false,
        Fill::Random(1),
    )
    .map_err(SessionError::Engine)?;
    // Dependency timing with the window or reaction left to the trace: a
    // quarter of its mean service time (at least 1 ms), and the 95th
    // percentile of the recording host's reaction measured in it (one more
    // pass over the spool, before the recording begins).
    let mut host_reaction = None;
    let timing = match o.timing {
        Timing::Dependency {
            window_ns,
            reaction_ns,
        } => {
            let w = window_ns.unwrap_or_else(|| crate::default_window(pre.mean_service_ns));
            host_reaction = crate::deps::reaction(spool.iter(), w)?;
            let r = reaction_ns.unwrap_or_else(|| host_reaction.map_or(0, |h| h.p95_ns));
            Timing::Dependency {
                window_ns: Some(w),
                reaction_ns: Some(r),
            }
        }
        t => t,
    };
    let opts = ReplayOptions {
        timing,
        remap: o.remap,
        target_size: t.size,
        logical_block: lb,
        trace_extent: pre.extent,
    };
    // Record while playing: every probe of the target (its size, the
    // safety assessment's signature reads) is done by now; wait until the
    // device is quiet (another program's probe, such as udev's after an
    // earlier writer closed it, has finished) so the recording window
    // holds the replay and nothing else; then start the recorder first and
    // drain it from a thread.
    let quiet = match (&o.record, &t.name) {
        (Some(_), Some(name)) => Some(wait_quiet(name)),
        _ => None,
    };
    let recorder = match &o.record {
        Some(out) => Some((
            Recorder::start(std::slice::from_ref(&o.target), &RecordOptions::default())?,
            out.as_path(),
        )),
        None => None,
    };
    let rec_stop = AtomicBool::new(false);
    let (replay, record) = std::thread::scope(|s| -> Result<_, SessionError> {
        let drain = recorder.map(|(rec, out)| {
            let rec_stop = &rec_stop;
            s.spawn(move || record_until(rec, out, rec_stop))
        });
        if let Some(p) = &o.progress {
            p.planned
                .store(pre.requests, std::sync::atomic::Ordering::Relaxed);
        }
        let result = crate::replay_watched(
            &mut engine,
            spool.iter(),
            &opts,
            stop,
            o.progress.as_deref(),
        );
        rec_stop.store(true, Ordering::Relaxed);
        let record = match drain {
            Some(h) => Some(h.join().map_err(|_| SessionError::RecorderPanicked)??),
            None => None,
        };
        Ok((result?, record))
    })?;
    let mut replay = replay;
    replay.host_reaction = host_reaction;
    Ok(SessionReport {
        replay,
        quiet_before_recording: quiet,
        target: o.target.display().to_string(),
        spooled: spool.in_file(),
        trace: o.trace.display().to_string(),
        record,
        record_path: o.record.clone(),
        claim: claim.as_ref().map(|c| c.assessment().clone()),
    })
}

/// What `trace audit` found: the replay (recorded) and the seed's verdict
/// on the recording against the trace.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct AuditReport {
    /// The replay, with its recording's summary.
    pub replay: SessionReport,
    /// Where the recording of the replay is.
    pub recording: String,
    /// The original run's IO/s the score is held against, and where it
    /// came from ("given" or "trace head-to-head").
    pub original_iops: Option<f64>,
    /// Source of `original_iops`.
    pub original_iops_from: Cow<'static, str>,
    /// The seed's criteria, each with its figure; the score criterion is the
    /// replay's own score against `original_iops`.
    #[serde(deserialize_with = "drivelab_report::metrics::or_default")]
    pub criteria: Vec<drivelab_trace::compare::Criterion>,
    /// Every criterion that could be checked passed.
    pub pass: bool,
    /// The whole comparison of the recording with the trace.
    #[serde(deserialize_with = "drivelab_report::metrics::or_default")]
    pub comparison: drivelab_trace::Comparison,
}

/// `trace audit`: replay `o.trace` on `o.target` while recording the replay
/// into `o.record` (which must be set), then compare the recording with
/// the trace. `tolerance` is the seed's 5 % (service time: twice that);
/// `original_iops` is the original run's IO/s (default: the trace's own
/// head-to-head score).
pub fn audit(
    o: &SessionOptions,
    tolerance: f64,
    original_iops: Option<f64>,
    stop: &AtomicBool,
) -> Result<AuditReport, SessionError> {
    let Some(rec) = o.record.clone() else {
        return Err(SessionError::Input(
            "an audit records its replay: give the recording's path".into(),
        ));
    };
    if !(0.0..=1.0).contains(&tolerance) {
        return Err(SessionError::Input(format!(
            "--tolerance {tolerance} is outside 0..1 (it is a fraction: 0.05 = 5 %)"
        )));
    }
    if let Some(v) = original_iops {
        if !(v > 0.0 && v.is_finite()) {
            return Err(SessionError::Input(format!(
                "--original-iops must be above 0, not {v}"
            )));
        }
    }
    let replay = run(o, stop)?;
    let (_, mut a) = drivelab_trace::open_file(&o.trace, o.format, o.read)?;
    let (_, mut b) = drivelab_trace::open_file(&rec, Some(Format::Native), ReadOptions::default())?;
    let comparison = drivelab_trace::compare(&mut a, &mut b, tolerance)?;
    let (orig, from) = match original_iops {
        Some(v) => (Some(v), "given"),
        None => (comparison.score_a.map(|s| s.iops), "trace head-to-head"),
    };
    let mut criteria = comparison.criteria.clone();
    let score = drivelab_trace::compare::score_criterion(
        orig,
        (replay.replay.requests > 1 && replay.replay.score.withheld.is_none())
            .then_some(replay.replay.score.iops),
        tolerance,
    );
    match criteria.iter_mut().find(|c| c.name == "score") {
        Some(c) => *c = score,
        None => criteria.push(score),
    }
    // A recording that lost events is missing requests the drive served:
    // every other criterion would be judged on a partial trace.
    let lost = replay.record.as_ref().map_or(0, |s| s.lost_events);
    criteria.push(Criterion {
        name: "recording complete".into(),
        figure: format!("{lost} events lost by the kernel's trace buffer"),
        limit: "0".into(),
        pass: Some(lost == 0),
    });
    let pass = !criteria.iter().any(|c| c.pass == Some(false)) && !replay.replay.interrupted;
    Ok(AuditReport {
        recording: rec.display().to_string(),
        replay,
        original_iops: orig,
        original_iops_from: from.into(),
        criteria,
        pass,
        comparison,
    })
}

/// Size and logical block of `target` (reads only; a replay that writes
/// claims the target afterwards).
fn target_facts(target: &Path) -> Result<TargetFacts, SessionError> {
    let md = std::fs::metadata(target).map_err(|e| {
        SessionError::Input(format!(
            "{}: {e}; give an existing device or file as --target",
            target.display()
        ))
    })?;
    if md.file_type().is_block_device() {
        let dev = BlockDevice::from_path(target).map_err(|e| SessionError::Input(e.to_string()))?;
        Ok(TargetFacts {
            name: Some(dev.name.clone()),
            size: dev.size.0,
            logical_block: u64::from(dev.logical_sector.0),
            is_block: true,
        })
    } else if md.is_file() {
        Ok(TargetFacts {
            name: None,
            size: md.len(),
            logical_block: 512,
            is_block: false,
        })
    } else {
        Err(SessionError::Input(format!(
            "{} is neither a block device nor a file",
            target.display()
        )))
    }
}

/// Wait until block device `name` is quiet: nothing in flight and its I/O
/// counters unchanged over three readings 50 ms apart. `false` when it is
/// not within 5 s (or its statistics cannot be read).
fn wait_quiet(name: &str) -> bool {
    use drivelab_device::diskstats::DiskStats;
    let count =
        |d: &DiskStats| d.reads + d.writes + d.discards.unwrap_or(0) + d.flushes.unwrap_or(0);
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    let mut last = None;
    let mut still = 0;
    while std::time::Instant::now() < deadline {
        let Ok(d) = DiskStats::read(name) else {
            return false;
        };
        let now = (count(&d), d.in_flight);
        if now.1 == 0 && last == Some(now.0) {
            still += 1;
            if still >= 3 {
                return true;
            }
        } else {
            still = 0;
        }
        last = Some(now.0);
        std::thread::sleep(Duration::from_millis(50));
    }
    false
}

/// Drain `rec` into a native trace at `out` until `stop`, then stop it and
/// write what was left.
fn record_until(
    mut rec: Recorder,
    out: &Path,
    stop: &AtomicBool,
) -> Result<RecordSummary, SessionError> {
    let mut file = drivelab_device::output::Output::new(out)
        .option("--record")
        .create()?;
    rec.spool_beside(out, "--record")?;
    let mut w = drivelab_trace::open_writer(&mut file, Format::Native, rec.devices())?;
    let summary = rec.record_into(w.as_mut(), || stop.load(Ordering::Relaxed))?;
    w.finish()?;
    drop(w);
    file.commit()?;
    Ok(summary)
}

impl fmt::Display for SessionReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let r = &self.replay;
        let ms = |ns: f64| ns / 1e6;
        writeln!(
            f,
            "replay on {} ({} timing): {} requests ({} reads, {} writes, {} trims, {} flushes) in {:.3} s, {} errors",
            self.target, r.mode, r.requests, r.reads, r.writes, r.trims, r.flushes, r.duration_s, r.errors
        )?;
        match &r.score.withheld {
            Some(why) => writeln!(f, "  score: none: {why}")?,
            None => writeln!(
                f,
                "  score: {:.3} ms head-to-head = {:.2} IO/s",
                r.score.head_to_head_ms, r.score.iops
            )?,
        }
        let d = &r.service_time_ns;
        writeln!(
            f,
            "  service time (ms): mean {:.3}, stdev {:.3}, min {:.3}, p50 {:.3}, p99 {:.3}, max {:.3}",
            ms(d.mean),
            ms(d.stddev),
            ms(d.min as f64),
            ms(d.p50 as f64),
            ms(d.p99 as f64),
            ms(d.max as f64)
        )?;
        writeln!(
            f,
            "  CPU: {:.2} s user, {:.2} s system = {:.2} us per request",
            r.cpu_user_ns as f64 / 1e9,
            r.cpu_system_ns as f64 / 1e9,
            r.cpu_ns_per_request() / 1e3
        )?;
        if r.lateness_ns.count > 0 {
            let l = &r.lateness_ns;
            writeln!(
                f,
                "  issue lateness (us): mean {:.1}, p50 {:.1}, p90 {:.1}, p99 {:.1}, p99.9 {:.1}, max {:.1}",
                l.mean / 1e3,
                l.p50 as f64 / 1e3,
                l.p90 as f64 / 1e3,
                l.p99 as f64 / 1e3,
                l.p999 as f64 / 1e3,
                l.max as f64 / 1e3,
            )?;
        }
        if r.mode == "dependency" {
            let w = &r.dependency_wait_ns;
            writeln!(
                f,
                "  dependencies (window {:.3} ms, host reaction {:.3} ms taken off think times): {} requests waited for a completion, {} kept their gap; {} dependency waits (dependency still in flight: mean {:.3} ms, max {:.3} ms); {} released by the slot of a chain that ran out",
                ms(r.dependency_window_ns.unwrap_or(0) as f64),
                ms(r.reaction_ns.unwrap_or(0) as f64),
                r.dependencies.dependent,
                r.dependencies.independent,
                r.dependency_waits,
                ms(w.mean),
                ms(w.max as f64),
                r.handed_on
            )?;
            if let Some(h) = &r.host_reaction {
                let q = &r.replayer_reaction_ns;
                writeln!(
                    f,
                    "  reaction to a completion (us): recording host p50 {:.1}, p90 {:.1}, p95 {:.1}, mean {:.1} ({} seen to end, {} cut off by the next completion; in the trace, block layer); replayer, reaped to queued, p50 {:.1}, p90 {:.1}, mean {:.1} ({})",
                    h.p50_ns as f64 / 1e3,
                    h.p90_ns as f64 / 1e3,
                    h.p95_ns as f64 / 1e3,
                    h.mean_ns / 1e3,
                    h.count,
                    h.censored,
                    q.p50 as f64 / 1e3,
                    q.p90 as f64 / 1e3,
                    q.mean / 1e3,
                    q.count
                )?;
            }
        }
        writeln!(f, "  stalls (due while every slot was busy): {}", r.stalls)?;
        if r.timed_waits + r.polls > 0 {
            writeln!(
                f,
                "  waits for a request not yet due: {} in the kernel with a timer, {} by polling",
                r.timed_waits, r.polls
            )?;
        }
        if r.remapped + r.aligned > 0 {
            writeln!(
                f,
                "  {} requests remapped into the target, {} aligned to its logical block",
                r.remapped, r.aligned
            )?;
        }
        if let Some(e) = &r.first_error {
            writeln!(f, "  first error: {e}")?;
        }
        if r.interrupted {
            writeln!(f, "  INTERRUPTED: the figures cover the part played")?;
        }
        if let (Some(s), Some(p)) = (&self.record, &self.record_path) {
            writeln!(
                f,
                "  recorded the replay into {}: {} requests, {} lost events",
                p.display(),
                s.requests,
                s.lost_events
            )?;
            if s.lost_events > 0 {
                writeln!(
                    f,
                    "  INCOMPLETE RECORDING: the kernel's trace buffer lost {} events; the recording misses requests the target served",
                    s.lost_events
                )?;
            }
            if self.quiet_before_recording == Some(false) {
                writeln!(
                    f,
                    "  warning: the target was not quiet when the recording began (another program's I/O may be in it)"
                )?;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dir(tag: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("drivelab-session-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    fn opts(trace: &Path, target: &Path) -> SessionOptions {
        SessionOptions {
            trace: trace.to_path_buf(),
            format: Some(Format::Fio),
            read: ReadOptions::default(),
            target: target.to_path_buf(),
            timing: Timing::NoStall,
            depth: 4,
            remap: Remap::Wrap,
            record: None,
            force: false,
            progress: None,
            spool: SpoolOptions::default(),
        }
    }

    /// A fio iolog with `n` requests of `bs` bytes on one file.
    fn iolog(path: &Path, op: &str, n: u64, bs: u64) {
        let mut s = String::from("fio version 3 iolog\n0 dev add\n0 dev open\n");
        for i in 0..n {
            s += &format!("{} dev {op} {} {bs}\n", i * 10, i * bs);
        }
        s += &format!("{} dev close\n", n * 10);
        std::fs::write(path, s).unwrap();
    }

    #[test]
    fn a_file_target_replays_the_trace_and_the_report_names_both() {
        let d = dir("file");
        let (trace, target) = (d.join("t.iolog"), d.join("target.img"));
        iolog(&trace, "write", 16, 4096);
        std::fs::File::create(&target)
            .unwrap()
            .set_len(1 << 20)
            .unwrap();
        let r = run(&opts(&trace, &target), &AtomicBool::new(false)).unwrap();
        assert_eq!(r.replay.requests, 16);
        assert_eq!(r.replay.writes, 16);
        assert_eq!(r.replay.bytes_written, 16 * 4096);
        assert_eq!(r.replay.errors, 0);
        let v = serde_json::to_value(&r).unwrap();
        assert_eq!(v["requests"], 16);
        assert_eq!(v["target"], target.display().to_string());
        assert_eq!(v["trace"], trace.display().to_string());
        assert!(v.get("record").is_none());
        assert!(r.to_string().starts_with(&format!(
            "replay on {} (afap timing): 16 requests (0 reads, 16 writes, 0 trims, 0 flushes)",
            target.display()
        )));
        let _ = std::fs::remove_dir_all(&d);
    }

    #[test]
    fn a_trace_beyond_the_memory_bound_replays_the_same_from_the_spool_file() {
        // 3,000 writes of 4 KiB, each to its own block: replayed with the
        // whole trace in memory, and with 100 requests in memory and the
        // rest in a spool file, in each mode that plays them in trace
        // order. Every block is written once either way.
        let d = dir("spool");
        let (trace, target, spool_dir) = (d.join("t.iolog"), d.join("target.img"), d.join("spool"));
        iolog(&trace, "write", 3_000, 4096);
        std::fs::create_dir_all(&spool_dir).unwrap();
        for timing in [
            Timing::ClosedLoop,
            Timing::NoStall,
            Timing::Original { speed: 1000.0 },
        ] {
            let mut got = Vec::new();
            for mem_bytes in [crate::spool::DEFAULT_MEM_BYTES, 100 * crate::spool::RECORD] {
                std::fs::write(&target, vec![0u8; 3_000 * 4096]).unwrap();
                let mut o = opts(&trace, &target);
                o.timing = timing;
                o.spool = SpoolOptions {
                    mem_bytes,
                    dir: spool_dir.clone(),
                };
                let r = run(&o, &AtomicBool::new(false)).unwrap();
                assert_eq!(std::fs::read_dir(&spool_dir).unwrap().count(), 0);
                let data = std::fs::read(&target).unwrap();
                // Random data in every block: none left zero.
                let zero = data
                    .chunks(4096)
                    .filter(|b| b.iter().all(|&x| x == 0))
                    .count();
                assert_eq!(zero, 0, "{timing:?}: blocks not written");
                let p = &r.replay;
                got.push((p.requests, p.completed, p.writes, p.bytes_written, p.errors));
                assert_eq!(p.mode, timing.name());
                assert_eq!(
                    r.spooled,
                    if mem_bytes == 100 * crate::spool::RECORD {
                        2_900
                    } else {
                        0
                    }
                );
            }
            assert_eq!(got[0], (3_000, 3_000, 3_000, 3_000 * 4096, 0), "{timing:?}");
            assert_eq!(got[0], got[1], "{timing:?}");
        }
        let _ = std::fs::remove_dir_all(&d);
    }

    #[test]
    fn refusals_come_before_the_target_is_written() {
        let d = dir("refuse");
        let (trace, target) = (d.join("t.iolog"), d.join("target.img"));
        iolog(&trace, "write", 4, 8192);
        std::fs::write(&target, vec![0x5Au8; 4096]).unwrap();
        let e = run(&opts(&trace, &target), &AtomicBool::new(false)).unwrap_err();
        assert!(e.is_input());
        assert!(
            e.to_string()
                .contains("is smaller than the trace's largest request (8192 bytes)"),
            "{e}"
        );
        let mut o = opts(&trace, &target);
        o.record = Some(d.join("rec.dlt"));
        std::fs::File::options()
            .write(true)
            .open(&target)
            .unwrap()
            .set_len(1 << 20)
            .unwrap();
        let e = run(&o, &AtomicBool::new(false)).unwrap_err();
        assert!(
            e.to_string().starts_with("--record needs a block device"),
            "{e}"
        );
        let mut o = opts(&trace, &target);
        o.timing = Timing::Original { speed: 0.0 };
        let e = run(&o, &AtomicBool::new(false)).unwrap_err();
        assert_eq!(e.to_string(), "--speed must be above 0, not 0");
        let e = run(&opts(&trace, &d.join("missing")), &AtomicBool::new(false)).unwrap_err();
        assert!(
            e.to_string()
                .contains("give an existing device or file as --target"),
            "{e}"
        );
        let data = std::fs::read(&target).unwrap();
        assert!(
            data[..4096].iter().all(|&b| b == 0x5A),
            "the target changed"
        );
        let _ = std::fs::remove_dir_all(&d);
    }
}

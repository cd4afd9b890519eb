//! `drivelab trace replay`: play a trace against a device or file keeping
//! its dependencies (the default: the score ranks drives), with its
//! original timing, as fast as possible or closed-loop, optionally
//! recording the replay itself for `drivelab trace compare`; and
//! `drivelab trace audit`, the IPEAK audit in one command (replay while
//! recording, compare, the seed's verdict).
//!
//! The work (trace prepass, target checks, recording, replay, comparison)
//! is `drivelab_replay::session::{run, audit}`; this module parses flags
//! and prints.

use std::path::PathBuf;

use clap::{Args, ValueEnum};
use drivelab_replay::session::{self, SessionError, SessionOptions};
use drivelab_replay::{Remap, Timing};

use crate::error::usage;
use crate::output::OutputArgs;
use crate::trace_input::{parse_format, InputArgs};

/// How offsets beyond a smaller target are placed.
#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum RemapArg {
    /// offset mod (target size − length)
    Wrap,
    /// offset × target size / trace extent
    Scale,
}

/// How requests are timed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ModeArg {
    /// Keep the trace's dependencies and think times (hfplayer): a request
    /// issued shortly after a completion waits for that completion in the
    /// replay; a faster drive finishes sooner. The mode for scores.
    Dependency,
    /// Open loop: every request at its original time (divided by --speed).
    Original,
    /// Open loop as fio's read_iolog plays a log: every request at least
    /// its trace gap (divided by --speed) after the previous one was
    /// issued, so a late request delays the rest.
    Gaps,
    /// As fast as free slots allow, in trace order.
    Afap,
}

/// How a trace is played: the flags `trace replay` and `trace audit` share.
#[derive(Args, Debug)]
pub struct PlayArgs {
    /// The trace to play.
    #[arg(value_name = "TRACE")]
    pub trace: PathBuf,
    /// Device or file to play it on.
    #[arg(long, value_name = "DEV_OR_FILE")]
    pub target: PathBuf,
    #[command(flatten)]
    pub input: InputArgs,
    /// Timing: dependency (default), original, gaps or afap.
    #[arg(long, value_enum, default_value_t = ModeArg::Dependency)]
    pub mode: ModeArg,
    /// Dependency timing: a request issued at most this many microseconds
    /// after a completion depends on it. Default: a quarter of the trace's
    /// mean service time, at least 1000.
    #[arg(long, value_name = "US")]
    pub dep_window_us: Option<u64>,
    /// Dependency timing: take this many microseconds off each think time
    /// (the recording host's own completion-to-issue path; the replay goes
    /// through its own instead). Default: the host's reaction measured in
    /// the trace, the 95th percentile of the time from a completion to the
    /// first request issued after it (a reaction another completion cut
    /// off counts as lasting at least until then); 0 keeps think times
    /// whole.
    #[arg(long, value_name = "US")]
    pub reaction_us: Option<u64>,
    /// Original or gap timing: time compression, 2 plays twice as fast.
    #[arg(long, value_name = "X")]
    pub speed: Option<f64>,
    /// The same as --mode afap.
    #[arg(long)]
    pub no_stall: bool,
    /// Closed loop: keep N requests outstanding, ignoring timing (1 to
    /// 32768, the bound of `run --iodepth`).
    #[arg(long, value_name = "N", value_parser = depth)]
    pub iodepth: Option<u32>,
    /// Most requests in flight (every mode but the closed loop; 1 to 32768).
    #[arg(long, value_name = "N", default_value_t = 256, value_parser = depth)]
    pub max_outstanding: u32,
    /// Place offsets beyond the target by wrapping or scaling.
    #[arg(long, value_enum, default_value_t = RemapArg::Wrap)]
    pub remap: RemapArg,
    /// Write to a device that is partitioned or holds a signature (never
    /// to one whose bytes are in use, nor the running system).
    #[arg(long)]
    pub force: bool,
}

/// `drivelab trace replay`.
#[derive(Args, Debug)]
pub struct ReplayArgs {
    #[command(flatten)]
    pub play: PlayArgs,
    /// Record the replay as it plays into TRACE2 (native format; block devices only).
    #[arg(long, value_name = "TRACE2")]
    pub record: Option<PathBuf>,
    /// Serve live figures for Prometheus at http://ADDR/metrics while the
    /// replay runs (ADDR: PORT on loopback, or HOST:PORT); see
    /// docs/metrics.md.
    #[arg(long = "metrics-listen", value_name = "ADDR")]
    pub metrics_listen: Option<String>,
    /// With --metrics-listen: keep serving the final figures for TIME
    /// (s when bare) after the replay ends, so the last scrape sees them.
    #[arg(long = "metrics-linger", value_name = "TIME")]
    pub metrics_linger: Option<String>,
    #[command(flatten)]
    pub out: OutputArgs,
}

/// `drivelab trace audit`.
#[derive(Args, Debug)]
pub struct AuditArgs {
    #[command(flatten)]
    pub play: PlayArgs,
    /// Keep the recording of the replay in TRACE2 (native format). Default:
    /// a temporary file, removed afterwards.
    #[arg(long, value_name = "TRACE2")]
    pub record: Option<PathBuf>,
    /// The seed's limits, as a fraction: the time-weighted queue-depth
    /// distance and the score may differ this much, the mean service time
    /// twice as much.
    #[arg(long, value_name = "X", default_value_t = 0.05)]
    pub tolerance: f64,
    /// The original run's IO/s (e.g. Iometer's figure) the score is held
    /// against. Default: the trace's own head-to-head score.
    #[arg(long, value_name = "IOPS")]
    pub original_iops: Option<f64>,
    #[command(flatten)]
    pub out: OutputArgs,
}

/// A queue depth: 1 to the engine's bound, as `run --iodepth` takes.
fn depth(s: &str) -> Result<u32, String> {
    let max = drivelab_engine::engine::MAX_DEPTH;
    match s.trim().parse::<u64>() {
        Ok(n) if (1..=u64::from(max)).contains(&n) => Ok(n as u32),
        _ => Err(format!("give 1 to {max} requests in flight")),
    }
}

/// A refused request (exit status 2) or a failure (exit status 1).
fn session_error(e: SessionError) -> anyhow::Error {
    if e.is_input() {
        usage(e.to_string())
    } else {
        anyhow::Error::new(e)
    }
}

/// The session these flags ask for (the recording set by the caller).
fn session_options(a: PlayArgs, record: Option<PathBuf>) -> anyhow::Result<SessionOptions> {
    let format = parse_format(&a.input.format)?;
    if let Some(speed) = a.speed {
        if !(speed > 0.0 && speed.is_finite()) {
            return Err(usage(format!("--speed must be above 0, not {speed}")));
        }
    }
    let mode = if a.no_stall {
        if matches!(a.mode, ModeArg::Original | ModeArg::Gaps) || a.speed.is_some() {
            return Err(usage(
                "--no-stall and timed modes (--mode original or gaps, --speed) exclude each other",
            ));
        }
        ModeArg::Afap
    } else if a.speed.is_some() {
        match a.mode {
            ModeArg::Afap => {
                return Err(usage(
                    "--speed applies to --mode original or gaps, not afap",
                ))
            }
            ModeArg::Gaps => ModeArg::Gaps,
            _ => ModeArg::Original,
        }
    } else {
        a.mode
    };
    if a.dep_window_us == Some(0) {
        return Err(usage("--dep-window-us must be at least 1"));
    }
    if a.iodepth.is_some() && mode != ModeArg::Dependency {
        return Err(usage(
            "--iodepth (closed loop) excludes --mode original/gaps/afap, --no-stall and --speed",
        ));
    }
    let (timing, depth) = match (a.iodepth, mode) {
        (Some(n), _) => (Timing::ClosedLoop, n),
        (None, ModeArg::Afap) => (Timing::NoStall, a.max_outstanding),
        (None, ModeArg::Original) => (
            Timing::Original {
                speed: a.speed.unwrap_or(1.0),
            },
            a.max_outstanding,
        ),
        (None, ModeArg::Gaps) => (
            Timing::Gaps {
                speed: a.speed.unwrap_or(1.0),
            },
            a.max_outstanding,
        ),
        (None, ModeArg::Dependency) => (
            Timing::Dependency {
                window_ns: a.dep_window_us.map(|us| us.saturating_mul(1000)),
                reaction_ns: a.reaction_us.map(|us| us.saturating_mul(1000)),
            },
            a.max_outstanding,
        ),
    };
    Ok(SessionOptions {
        trace: a.trace,
        format,
        read: a.input.read_options(),
        target: a.target,
        timing,
        depth,
        remap: match a.remap {
            RemapArg::Wrap => Remap::Wrap,
            RemapArg::Scale => Remap::Scale,
        },
        record,
        force: a.force,
        progress: None,
        spool: Default::default(),
    })
}

/// Run `drivelab trace replay`.
pub fn run(a: ReplayArgs) -> anyhow::Result<u8> {
    let inputs = [a.play.trace.as_path(), a.play.target.as_path()];
    a.out.check_inputs(&inputs)?;
    if let Some(p) = &a.record {
        crate::output::check_file_inputs(p, "--record", &inputs)?;
    }
    // The endpoint is bound before the target is opened: an address that
    // cannot be bound is bad input, nothing written.
    let live = crate::metrics::Live::from_args(
        a.metrics_listen.as_deref(),
        a.metrics_linger.as_deref(),
        "replay",
        !a.out.json(),
    )?;
    let mut opts = session_options(a.play, a.record)?;
    let spec = spec_json(&opts);
    let report = match &live {
        Some(l) => {
            let progress = std::sync::Arc::new(drivelab_replay::Progress::default());
            opts.progress = Some(progress.clone());
            let finished = std::sync::atomic::AtomicBool::new(false);
            let report = std::thread::scope(|s| {
                s.spawn(|| crate::metrics::watch_replay(l, &progress, &finished));
                let r = session::run(&opts, crate::signal::stop_flag());
                finished.store(true, std::sync::atomic::Ordering::Release);
                r
            })
            .map_err(session_error)?;
            l.settle_replay(&report.replay, &progress);
            report
        }
        None => session::run(&opts, crate::signal::stop_flag()).map_err(session_error)?,
    };
    let out = if a.out.json() {
        format!(
            "{}\n",
            serde_json::to_string_pretty(&serde_json::to_value(&report)?)?
        )
    } else {
        report.to_string()
    };
    a.out.emit(&out)?;
    let lost = report.record.as_ref().map_or(0, |s| s.lost_events);
    let code = if report.replay.interrupted {
        130
    } else if report.replay.errors > 0 || lost > 0 {
        1
    } else {
        0
    };
    crate::cmd_store::save_printed(
        drivelab_store::Kind::Replay,
        &out,
        a.out.json(),
        &report,
        code,
        spec,
        Vec::new(),
    )?;
    if let Some(l) = &live {
        l.linger(crate::signal::stop_flag());
    }
    Ok(code)
}

/// What a stored replay or audit was asked to do.
fn spec_json(o: &SessionOptions) -> serde_json::Value {
    serde_json::json!({
        "trace": o.trace.display().to_string(),
        "target": o.target.display().to_string(),
        "timing": format!("{:?}", o.timing),
        "depth": o.depth,
        "remap": format!("{:?}", o.remap),
    })
}

/// Removes a temporary recording when dropped.
struct TempRecording(Option<PathBuf>);

impl Drop for TempRecording {
    fn drop(&mut self) {
        if let Some(p) = &self.0 {
            let _ = std::fs::remove_file(p);
        }
    }
}

/// Run `drivelab trace audit`: exit status 0 when every criterion passed,
/// 1 when one failed (or the replay had errors), 2 on bad input.
pub fn run_audit(a: AuditArgs) -> anyhow::Result<u8> {
    let (trace, target) = (a.play.trace.clone(), a.play.target.clone());
    let inputs = [trace.as_path(), target.as_path()];
    a.out.check_inputs(&inputs)?;
    if !(0.0..=1.0).contains(&a.tolerance) {
        return Err(usage(format!(
            "--tolerance {} is outside 0..1 (it is a fraction: 0.05 = 5 %)",
            a.tolerance
        )));
    }
    if let Some(v) = a.original_iops {
        if !(v > 0.0 && v.is_finite()) {
            return Err(usage(format!("--original-iops must be above 0, not {v}")));
        }
    }
    let (record, _temp) = match a.record {
        Some(p) => {
            crate::output::check_file_inputs(&p, "--record", &inputs)?;
            (p, TempRecording(None))
        }
        None => {
            let p = std::env::temp_dir().join(format!(
                "drivelab-audit-{}-{}.dlt",
                std::process::id(),
                drivelab_engine::clock::now_ns()
            ));
            (p.clone(), TempRecording(Some(p)))
        }
    };
    let opts = session_options(a.play, Some(record))?;
    // The audit records the replay at the block layer, with or without
    // --record: a target that is no block device is refused as such.
    // The trace is looked at first, as the replay does.
    drivelab_device::input::check_regular(&opts.trace, drivelab_device::input::Kind::Trace)?;
    if let Ok(md) = std::fs::metadata(&opts.target) {
        use std::os::unix::fs::FileTypeExt;
        if !md.file_type().is_block_device() {
            return Err(usage(format!(
                "{} is not a block device: trace audit records its replay at the block layer, so give a block device as --target (replay onto a file with 'drivelab trace replay')",
                opts.target.display()
            )));
        }
    }
    let spec = spec_json(&opts);
    let report = session::audit(
        &opts,
        a.tolerance,
        a.original_iops,
        crate::signal::stop_flag(),
    )
    .map_err(session_error)?;
    let out = if a.out.json() {
        format!(
            "{}\n",
            serde_json::to_string_pretty(&serde_json::to_value(&report)?)?
        )
    } else {
        human_audit(&report, _temp.0.is_some())
    };
    a.out.emit(&out)?;
    let code = if report.replay.replay.interrupted {
        130
    } else if report.pass && report.replay.replay.errors == 0 {
        0
    } else {
        1
    };
    crate::cmd_store::save_printed(
        drivelab_store::Kind::Audit,
        &out,
        a.out.json(),
        &report,
        code,
        spec,
        Vec::new(),
    )?;
    Ok(code)
}

fn human_audit(r: &session::AuditReport, temporary: bool) -> String {
    let mut s = r.replay.to_string();
    if !temporary {
        s.push_str(&format!("recording kept in {}\n", r.recording));
    }
    s.push_str(&format!(
        "audit of the recording against {} (original {}: {}):\n",
        r.replay.trace,
        r.original_iops_from,
        r.original_iops
            .map(|v| format!("{v:.2} IO/s"))
            .unwrap_or_else(|| "unknown".into())
    ));
    let w = r
        .criteria
        .iter()
        .map(|c| c.name.chars().count())
        .max()
        .unwrap_or(0);
    for c in &r.criteria {
        s.push_str(&format!(
            "  {:4} {:w$}  {}  (limit: {})\n",
            c.verdict(),
            c.name,
            c.figure,
            c.limit
        ));
    }
    s.push_str(if r.pass {
        "PASS: every criterion of the seed that could be checked passed\n"
    } else {
        "FAIL: see the criteria marked FAIL\n"
    });
    s
}

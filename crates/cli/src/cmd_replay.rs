//! `drivelab trace replay`: play a trace against a device or file with its
//! original timing (or faster, or closed-loop), optionally recording the
//! replay itself for `drivelab trace compare` (the IPEAK audit).
//!
//! The work (trace prepass, target checks, recording, replay) is
//! `drivelab_replay::session::run`; this module parses flags and prints.

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

/// `drivelab trace replay`.
#[derive(Args, Debug)]
pub struct ReplayArgs {
    /// The trace to play.
    #[arg(value_name = "TRACE")]
    pub trace: PathBuf,
    /// Device or file to play it on.
    #[arg(long, value_name = "DEV_OR_FILE")]
    pub target: PathBuf,
    #[command(flatten)]
    pub input: InputArgs,
    /// Time compression: 2 plays twice as fast (original timing).
    #[arg(long, value_name = "X", default_value_t = 1.0)]
    pub speed: f64,
    /// Ignore timing: issue as fast as free slots allow, in trace order.
    #[arg(long)]
    pub no_stall: bool,
    /// Closed loop: keep N requests outstanding, ignoring timing.
    #[arg(long, value_name = "N")]
    pub iodepth: Option<u32>,
    /// Most requests in flight with original timing or --no-stall.
    #[arg(long, value_name = "N", default_value_t = 256)]
    pub max_outstanding: u32,
    /// Place offsets beyond the target by wrapping or scaling.
    #[arg(long, value_enum, default_value_t = RemapArg::Wrap)]
    pub remap: RemapArg,
    /// Record the replay as it plays into TRACE2 (native format; block devices only).
    #[arg(long, value_name = "TRACE2")]
    pub record: Option<PathBuf>,
    /// Write to a device the safety checks refuse (never the running system).
    #[arg(long)]
    pub force: bool,
    #[command(flatten)]
    pub out: OutputArgs,
}

/// A refused request (exit status 2) or a failure (exit status 1).
fn session_error(e: SessionError) -> anyhow::Error {
    if e.is_input() {
        usage(e.to_string())
    } else {
        anyhow::Error::new(e)
    }
}

/// Run `drivelab trace replay`.
pub fn run(a: ReplayArgs) -> anyhow::Result<u8> {
    let format = parse_format(&a.input.format)?;
    a.out.check()?;
    if let Some(p) = &a.record {
        crate::output::check_file(p, "--record")?;
    }
    if !(a.speed > 0.0 && a.speed.is_finite()) {
        return Err(usage(format!("--speed must be above 0, not {}", a.speed)));
    }
    let (timing, depth) = match (a.iodepth, a.no_stall) {
        (Some(_), true) => {
            return Err(usage(
                "--iodepth (closed loop) and --no-stall exclude each other",
            ))
        }
        (Some(n), false) => (Timing::ClosedLoop, n),
        (None, true) => (Timing::NoStall, a.max_outstanding),
        (None, false) => (Timing::Original { speed: a.speed }, a.max_outstanding),
    };
    let opts_trace = a.trace.display().to_string();
    let opts_target = a.target.display().to_string();
    let timing_word = format!("{timing:?}");
    let remap_word = format!("{:?}", a.remap);
    let opts = SessionOptions {
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
        record: a.record,
        force: a.force,
    };
    let report = session::run(&opts, crate::signal::stop_flag()).map_err(session_error)?;
    let out = if a.out.json() {
        format!(
            "{}\n",
            serde_json::to_string_pretty(&serde_json::to_value(&report)?)?
        )
    } else {
        report.to_string()
    };
    a.out.emit(&out)?;
    let code = if report.replay.interrupted {
        130
    } else if report.replay.errors > 0 {
        1
    } else {
        0
    };
    let rendered;
    let (json, text) = if a.out.json() {
        (out.as_str(), None)
    } else {
        rendered = format!(
            "{}\n",
            serde_json::to_string_pretty(&serde_json::to_value(&report)?)?
        );
        (rendered.as_str(), Some(out.as_str()))
    };
    crate::cmd_store::save(crate::cmd_store::Outcome {
        kind: drivelab_store::Kind::Replay,
        json,
        text,
        exit_status: code,
        options: serde_json::json!({
            "trace": opts_trace,
            "target": opts_target,
            "timing": timing_word,
            "depth": depth,
            "remap": remap_word,
        }),
        artifacts: Vec::new(),
    });
    Ok(code)
}

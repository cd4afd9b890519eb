//! `drivelab trace replay`: play a trace against a device or file with its
//! original timing (or faster, or closed-loop), optionally recording the
//! replay itself for `drivelab trace compare` (the IPEAK audit).

use std::os::unix::fs::FileTypeExt;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};

use clap::{Args, ValueEnum};
use drivelab_device::blockdev::BlockDevice;
use drivelab_device::claim::{Claim, ClaimOptions, Consent};
use drivelab_engine::buf::Fill;
use drivelab_engine::engine::{Target, Uring};
use drivelab_replay::{prepass, replay, Remap, ReplayOptions, ReplayReport, Timing};
use drivelab_trace::record::{RecordOptions, Recorder};
use drivelab_trace::{Format, ReadOptions};

use crate::cmd_trace::InputArgs;
use crate::error::usage;
use crate::output::OutputArgs;

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

fn read_opts(i: &InputArgs) -> anyhow::Result<(Option<Format>, ReadOptions)> {
    let fmt = if i.format == "auto" {
        None
    } else {
        Some(Format::from_name(&i.format).map_err(|e| usage(e.to_string()))?)
    };
    Ok((
        fmt,
        ReadOptions {
            lenient: i.lenient,
            use_queue: i.use_queue,
        },
    ))
}

fn text(r: &ReplayReport, target: &str) -> String {
    let ms = |ns: f64| ns / 1e6;
    let mut s = format!(
        "replay on {target}: {} requests ({} reads, {} writes, {} trims, {} flushes) in {:.3} s, {} errors\n",
        r.requests, r.reads, r.writes, r.trims, r.flushes, r.duration_s, r.errors
    );
    s += &format!(
        "  score: {:.3} ms head-to-head = {:.2} IO/s\n",
        r.score.head_to_head_ms, r.score.iops
    );
    let d = &r.service_time_ns;
    s += &format!(
        "  service time (ms): mean {:.3}, stdev {:.3}, min {:.3}, p50 {:.3}, p99 {:.3}, max {:.3}\n",
        ms(d.mean),
        ms(d.stddev),
        ms(d.min as f64),
        ms(d.p50 as f64),
        ms(d.p99 as f64),
        ms(d.max as f64)
    );
    if r.lateness_ns.count > 0 {
        let l = &r.lateness_ns;
        s += &format!(
            "  issue lateness (us): mean {:.1}, p50 {:.1}, p90 {:.1}, p99 {:.1}, p99.9 {:.1}, max {:.1}; {} stalls (all slots busy)\n",
            l.mean / 1e3,
            l.p50 as f64 / 1e3,
            l.p90 as f64 / 1e3,
            l.p99 as f64 / 1e3,
            l.p999 as f64 / 1e3,
            l.max as f64 / 1e3,
            r.stalls
        );
    }
    if r.remapped + r.aligned > 0 {
        s += &format!(
            "  {} requests remapped into the target, {} aligned to its logical block\n",
            r.remapped, r.aligned
        );
    }
    if let Some(e) = &r.first_error {
        s += &format!("  first error: {e}\n");
    }
    if r.interrupted {
        s += "  INTERRUPTED: the figures cover the part played\n";
    }
    s
}

/// Run `drivelab trace replay`.
pub fn run(a: ReplayArgs) -> anyhow::Result<u8> {
    let (fmt, ropts) = read_opts(&a.input)?;
    a.out.check()?;
    if let Some(p) = &a.record {
        crate::output::check_file(p, "--record")?;
    }
    if !(a.speed > 0.0 && a.speed.is_finite()) {
        return Err(usage(format!("--speed must be above 0, not {}", a.speed)));
    }
    let (_, reader) =
        drivelab_trace::open_file(&a.trace, fmt, ropts).map_err(|e| usage(e.to_string()))?;
    let pre = prepass(reader).map_err(|e| usage(format!("{}: {e}", a.trace.display())))?;
    if pre.requests == 0 {
        return Err(usage(format!(
            "{} holds no requests to replay",
            a.trace.display()
        )));
    }
    // The target: size, logical block, safety.
    let md = std::fs::metadata(&a.target).map_err(|e| {
        usage(format!(
            "{}: {e}; give an existing device or file as --target",
            a.target.display()
        ))
    })?;
    let is_block = md.file_type().is_block_device();
    let (size, lb) = if is_block {
        let dev = BlockDevice::from_path(&a.target).map_err(|e| usage(e.to_string()))?;
        (dev.size.0, u64::from(dev.logical_sector.0))
    } else if md.is_file() {
        (md.len(), 512)
    } else {
        return Err(usage(format!(
            "{} is neither a block device nor a file",
            a.target.display()
        )));
    };
    if size < pre.max_len.max(lb) {
        return Err(usage(format!(
            "{} ({size} bytes) is smaller than the trace's largest request ({} bytes)",
            a.target.display(),
            pre.max_len
        )));
    }
    if a.record.is_some() && !is_block {
        return Err(usage(
            "--record needs a block device target (it records at the block layer)",
        ));
    }
    // A trace that writes needs the target claimed (safety assessment,
    // --force, an exclusive hold for the whole replay); one that only reads
    // opens it read-only.
    let claim = if pre.modifying > 0 {
        let consent = Consent {
            force: a.force,
            confirm: None,
        };
        let opts = ClaimOptions {
            direct: true,
            create_size: None,
        };
        Some(Claim::open(&a.target, &consent, &opts).map_err(|e| usage(e.to_string()))?)
    } else {
        None
    };
    let target = match &claim {
        Some(c) => Target::claimed(c, true),
        None => Target::read_only(&a.target, true),
    }
    .map_err(|e| usage(format!("cannot open {}: {e}", a.target.display())))?;
    let (timing, depth) = match (a.iodepth, a.no_stall) {
        (Some(_), true) => {
            return Err(usage(
                "--iodepth (closed loop) and --no-stall exclude each other",
            ))
        }
        (Some(n), false) => (Timing::ClosedLoop, n.max(1)),
        (None, true) => (Timing::NoStall, a.max_outstanding.max(1)),
        (None, false) => (
            Timing::Original { speed: a.speed },
            a.max_outstanding.max(1),
        ),
    };
    let max_len = pre.max_len.div_ceil(lb) * lb;
    let mut engine = Uring::new(
        vec![target],
        depth,
        max_len.max(lb) as usize,
        false,
        Fill::Random(1),
    )
    .map_err(|e| anyhow::anyhow!("cannot set up io_uring: {e}"))?;
    let opts = ReplayOptions {
        timing,
        remap: match a.remap {
            RemapArg::Wrap => Remap::Wrap,
            RemapArg::Scale => Remap::Scale,
        },
        target_size: size,
        logical_block: lb,
        trace_extent: pre.extent,
    };
    let stop = crate::signal::stop_flag();
    // Record while playing: start the recorder first, poll it from a thread.
    let rec_stop = AtomicBool::new(false);
    let recorder = match &a.record {
        Some(_) => Some(Recorder::start(
            std::slice::from_ref(&a.target),
            &RecordOptions::default(),
        )?),
        None => None,
    };
    let (_, reader) = drivelab_trace::open_file(&a.trace, fmt, ropts)?;
    let (report, rec_summary) = std::thread::scope(|s| -> anyhow::Result<_> {
        let poller = match (recorder, &a.record) {
            (Some(mut rec), Some(out)) => {
                let rec_stop = &rec_stop;
                Some(s.spawn(
                    move || -> anyhow::Result<drivelab_trace::record::RecordSummary> {
                        let file = std::fs::File::create(out)
                            .map_err(|e| anyhow::anyhow!("cannot create {}: {e}", out.display()))?;
                        let mut w = drivelab_trace::open_writer(
                            std::io::BufWriter::new(file),
                            Format::Native,
                            rec.devices(),
                        )?;
                        loop {
                            for r in rec.poll()? {
                                w.write(&r)?;
                            }
                            if rec_stop.load(Ordering::Relaxed) {
                                break;
                            }
                            std::thread::sleep(std::time::Duration::from_millis(20));
                        }
                        let (rest, summary) = rec.stop()?;
                        for r in rest {
                            w.write(&r)?;
                        }
                        w.finish()?;
                        Ok(summary)
                    },
                ))
            }
            _ => None,
        };
        let result = replay(&mut engine, reader, &opts, stop);
        rec_stop.store(true, Ordering::Relaxed);
        let summary = match poller {
            Some(h) => Some(
                h.join()
                    .map_err(|_| anyhow::anyhow!("the recorder thread panicked"))??,
            ),
            None => None,
        };
        Ok((result?, summary))
    })?;
    let target = a.target.display().to_string();
    let out = if a.out.json() {
        let mut v = serde_json::to_value(&report)?;
        v["target"] = serde_json::json!(target);
        v["trace"] = serde_json::json!(a.trace.display().to_string());
        if let Some(s) = &rec_summary {
            v["record"] = serde_json::to_value(s)?;
        }
        format!("{}\n", serde_json::to_string_pretty(&v)?)
    } else {
        let mut t = text(&report, &target);
        if let (Some(s), Some(p)) = (&rec_summary, &a.record) {
            t += &format!(
                "  recorded the replay into {}: {} requests, {} lost events\n",
                p.display(),
                s.requests,
                s.lost_events
            );
        }
        t
    };
    a.out.emit(&out)?;
    Ok(if report.interrupted {
        130
    } else if report.errors > 0 {
        1
    } else {
        0
    })
}

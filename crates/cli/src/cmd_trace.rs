//! `drivelab trace`: the IPEAK workflow on the command line. `record`
//! captures block requests from the kernel, `analyze` shows the
//! distributions AnalyzeTrace showed (and writes SVG plots), `convert`
//! moves traces between formats, `compare` audits one trace against
//! another (exit status 1 when they differ beyond the tolerance), `replay`
//! (in cmd_replay.rs) plays one back. The work is all in `drivelab_trace`
//! and `drivelab_replay`; these modules parse flags and print.

use std::path::{Path, PathBuf};
use std::time::Duration;

use clap::{Args, Subcommand};
use drivelab_trace::files::{self, Analyzed, Converted, FileError};
use drivelab_trace::{
    analyze::Analysis,
    compare::{Comparison, Criterion},
    record, Format, ReadOptions, ReadStats,
};
use serde_json::json;

use crate::output::{self, OutputArgs};
use crate::trace_input::{parse_format, InputArgs};

/// Arguments of `drivelab trace`.
#[derive(Args, Debug)]
pub struct TraceArgs {
    #[command(subcommand)]
    pub cmd: TraceCmd,
}

/// The trace subcommands.
#[derive(Subcommand, Debug)]
pub enum TraceCmd {
    /// Record block requests of DEV… from the kernel's block tracepoints.
    Record(RecordArgs),
    /// Analyze a trace: sizes, queue depth, seek distance, service and
    /// inter-arrival times, throughput; optional SVG plots.
    Analyze(AnalyzeArgs),
    /// Convert a trace between formats.
    Convert(ConvertArgs),
    /// Compare two traces (e.g. an original and the capture of its replay);
    /// exit status 1 when they differ beyond the tolerance.
    Compare(CompareArgs),
    /// Replay a trace on a device or file, keeping its dependencies (the
    /// default), its original timing, or as fast as possible; --record
    /// captures the replay for compare.
    Replay(crate::cmd_replay::ReplayArgs),
    /// The IPEAK audit in one command: replay TRACE on --target while
    /// recording the replay, compare the recording with TRACE and give the
    /// seed's verdict per criterion; exit status 1 when one fails.
    Audit(crate::cmd_replay::AuditArgs),
}

/// `drivelab trace record`.
#[derive(Args, Debug)]
pub struct RecordArgs {
    /// Block devices to record (e.g. /dev/sdb).
    #[arg(required = true, value_name = "DEV")]
    pub devices: Vec<PathBuf>,
    /// The trace file to write. What the kernel gives is spooled beside
    /// it while recording (an unlinked file: 64 bytes a request with the
    /// BPF recorder, about 160 with tracefs) and matched and written when
    /// the recording stops.
    #[arg(long, value_name = "TRACE")]
    pub output: PathBuf,
    /// Stop after S seconds (decimals allowed). Default: until Ctrl-C.
    #[arg(long, value_name = "S")]
    pub duration: Option<f64>,
    /// Trace format to write: native (default), fio, msr, blkparse; by
    /// default from the file extension (.dlt native, .iolog fio, .csv msr,
    /// .blkparse blkparse), else native.
    #[arg(long, value_name = "FMT")]
    pub to: Option<String>,
    /// Kernel ring buffer per CPU, KiB. Default: one second of events at
    /// 500k IOPS spread over the CPUs, at least 16 MiB per CPU.
    #[arg(long, value_name = "KIB", default_value_t = drivelab_trace::record::default_buffer_kb())]
    pub buffer_kb: u64,
    /// Which recorder: bpf (raw-tracepoint programs writing to per-CPU
    /// rings, the cheapest), tracefs (a private tracefs instance), or
    /// auto: bpf for bio-based devices (zram, device-mapper, md) when the
    /// kernel allows it, tracefs otherwise (on request-based devices the
    /// BPF programs miss a few completions). Either way the recording is
    /// checked against the device's own count of finished requests.
    #[arg(long, value_name = "KIND", default_value = "auto", value_parser = ["auto", "tracefs", "bpf"])]
    pub recorder: String,
    /// Output format of the summary: normal or json.
    #[arg(long = "output-format", value_enum, default_value_t = output::Format::Normal)]
    pub output_format: output::Format,
}

/// `drivelab trace analyze`.
#[derive(Args, Debug)]
pub struct AnalyzeArgs {
    /// The trace file; `-` reads standard input (a trace generated or
    /// decompressed on the fly, of any length).
    #[arg(value_name = "TRACE")]
    pub trace: PathBuf,
    #[command(flatten)]
    pub input: InputArgs,
    /// Write SVG plots (sizes, queue depth, seek distance, service time,
    /// access map) into DIR.
    #[arg(long, value_name = "DIR")]
    pub plots: Option<PathBuf>,
    /// With --plots, also write a PNG of each plot (a build with
    /// `--features png`).
    #[arg(long, requires = "plots")]
    pub png: bool,
    #[command(flatten)]
    pub out: OutputArgs,
}

/// `drivelab trace convert`.
#[derive(Args, Debug)]
pub struct ConvertArgs {
    /// Input trace.
    #[arg(value_name = "IN")]
    pub input_path: PathBuf,
    /// Output trace.
    #[arg(value_name = "OUT")]
    pub output_path: PathBuf,
    /// Input format (default: auto).
    #[arg(long, value_name = "FMT", default_value = "auto")]
    pub from: String,
    /// Output format: native, fio, msr, blkparse (default: from OUT's
    /// extension: .dlt, .iolog, .csv, .blkparse/.txt).
    #[arg(long, value_name = "FMT")]
    pub to: Option<String>,
    /// Skip and count malformed input lines.
    #[arg(long)]
    pub lenient: bool,
    /// blkparse input: use Q events instead of D.
    #[arg(long)]
    pub use_queue: bool,
    #[command(flatten)]
    pub out: OutputArgs,
}

/// `drivelab trace compare`.
#[derive(Args, Debug)]
pub struct CompareArgs {
    /// The reference trace (A).
    #[arg(value_name = "TRACE")]
    pub a: PathBuf,
    /// The trace compared with it (B).
    #[arg(value_name = "TRACE2")]
    pub b: PathBuf,
    /// The seed's limits, as a fraction (0.05 = 5 %): the time-weighted
    /// queue-depth distance and the score may differ this much, the mean
    /// service time twice as much.
    #[arg(long, value_name = "X", default_value_t = 0.05)]
    pub tolerance: f64,
    /// Format of A (default auto).
    #[arg(long, value_name = "FMT", default_value = "auto")]
    pub format: String,
    /// Format of B (default auto).
    #[arg(long = "format2", value_name = "FMT", default_value = "auto")]
    pub format2: String,
    /// Skip and count malformed lines in both.
    #[arg(long)]
    pub lenient: bool,
    #[command(flatten)]
    pub out: OutputArgs,
}

/// Run `drivelab trace …`.
pub fn run(a: TraceArgs) -> anyhow::Result<u8> {
    match a.cmd {
        TraceCmd::Record(r) => run_record(r),
        TraceCmd::Analyze(r) => run_analyze(r),
        TraceCmd::Convert(r) => run_convert(r),
        TraceCmd::Compare(r) => run_compare(r),
        TraceCmd::Replay(r) => crate::cmd_replay::run(r),
        TraceCmd::Audit(r) => crate::cmd_replay::run_audit(r),
    }
}

/// Input errors (bad format, malformed trace) are usage errors (exit 2);
/// I/O and kernel errors stay failures (exit 1).
fn file_error(e: FileError) -> anyhow::Error {
    if e.is_input() {
        crate::error::usage(e.to_string())
    } else {
        anyhow::Error::new(e)
    }
}

fn write_format(
    flag: Option<&str>,
    path: &Path,
    default: Option<Format>,
) -> anyhow::Result<Format> {
    let f = match flag {
        Some(s) => Format::from_name(s).map_err(|e| crate::error::usage(e.to_string()))?,
        None => match Format::from_extension(path).or(default) {
            Some(f) => f,
            None => {
                return Err(crate::error::usage(format!(
                    "cannot tell the output format from '{}'; pass --to native|fio|msr|blkparse or use a .dlt/.iolog/.csv/.blkparse name",
                    path.display()
                )))
            }
        },
    };
    if !f.writable() {
        return Err(crate::error::usage(format!(
            "drivelab cannot write {f}; writable formats: native, fio, msr, blkparse"
        )));
    }
    Ok(f)
}

fn stats_line(s: &ReadStats) -> String {
    let mut parts = Vec::new();
    for (n, v) in [
        ("malformed lines skipped", s.skipped),
        ("merges", s.merges),
        ("issues without completion", s.unmatched_issues),
        ("completions without issue", s.unmatched_completions),
        ("partial completions", s.partial_completions),
        ("requeues", s.requeues),
        ("other events ignored", s.ignored),
    ] {
        if v > 0 {
            parts.push(format!("{n} {v}"));
        }
    }
    parts.join(", ")
}

fn ns(v: Option<f64>) -> String {
    match v {
        None => "-".into(),
        Some(v) if v >= 1e9 => format!("{:.3} s", v / 1e9),
        Some(v) if v >= 1e6 => format!("{:.3} ms", v / 1e6),
        Some(v) if v >= 1e3 => format!("{:.3} µs", v / 1e3),
        Some(v) => format!("{v:.0} ns"),
    }
}

fn human(a: &Analysis) -> String {
    use std::fmt::Write as _;
    let mut s = String::new();
    let _ = writeln!(
        s,
        "requests {} (reads {}, writes {}, trims {}, flushes {}), read fraction {:.3}",
        a.requests, a.reads, a.writes, a.trims, a.flushes, a.read_fraction
    );
    let _ = writeln!(
        s,
        "bytes read {}, written {}; duration {:.6} s, {:.1} IOPS, mean size {:.1} B",
        a.bytes_read, a.bytes_written, a.duration_s, a.iops, a.mean_size_bytes
    );
    let mut sizes = a.sizes.clone();
    sizes.sort_by_key(|x| std::cmp::Reverse(x.count));
    let top: Vec<String> = sizes
        .iter()
        .take(6)
        .map(|b| format!("{} B {:.1}%", b.bytes, b.fraction * 100.0))
        .collect();
    let _ = writeln!(
        s,
        "sizes: {}{}",
        top.join(", "),
        if sizes.len() > 6 { ", …" } else { "" }
    );
    if a.queue_depth.is_empty() {
        let _ = writeln!(s, "queue depth: unknown (no completions in this trace)");
    } else {
        let mut qd = a.queue_depth.clone();
        qd.sort_by_key(|x| std::cmp::Reverse(x.count));
        let top: Vec<String> = qd
            .iter()
            .take(6)
            .map(|b| format!("{} {:.1}%", b.depth, b.fraction * 100.0))
            .collect();
        let _ = writeln!(
            s,
            "queue depth: mean {:.2}; {}",
            a.queue_depth_mean.unwrap_or(0.0),
            top.join(", ")
        );
    }
    let _ = writeln!(
        s,
        "seek distance: {:.1}% sequential, mean |distance| {:.0} sectors",
        a.seek_distance.zero_fraction * 100.0,
        a.seek_distance.mean_abs
    );
    let st = &a.service_time_ns;
    let _ = writeln!(
        s,
        "service time: mean {}, p50 {}, p90 {}, p99 {}, max {}",
        ns(st.mean),
        ns(st.p50.map(|v| v as f64)),
        ns(st.p90.map(|v| v as f64)),
        ns(st.p99.map(|v| v as f64)),
        ns(st.max.map(|v| v as f64))
    );
    let ia = &a.interarrival_ns;
    let _ = writeln!(
        s,
        "inter-arrival: mean {}, p50 {}, p99 {}{}",
        ns(ia.mean),
        ns(ia.p50.map(|v| v as f64)),
        ns(ia.p99.map(|v| v as f64)),
        if a.out_of_order > 0 {
            format!(" ({} out of order)", a.out_of_order)
        } else {
            String::new()
        }
    );
    s
}

fn run_analyze(a: AnalyzeArgs) -> anyhow::Result<u8> {
    let fmt = parse_format(&a.input.format)?;
    if a.png && !drivelab_trace::plot::PNG_BUILT {
        return Err(crate::error::usage(drivelab_trace::plot::PNG_MISSING));
    }
    a.out.check_inputs(&[&a.trace])?;
    if let Some(dir) = &a.plots {
        output::check_dir(dir, "--plots")?;
    }
    let plots = a.plots.as_deref().map(|dir| (dir, a.png));
    let Analyzed {
        analysis,
        format,
        reader: stats,
        devices,
        plots,
    } = files::analyze_file(&a.trace, fmt, a.input.read_options(), plots).map_err(file_error)?;
    if a.out.json() {
        let mut v = serde_json::to_value(&analysis)?;
        if let Some(o) = v.as_object_mut() {
            o.insert("trace".into(), json!(a.trace.display().to_string()));
            o.insert("format".into(), json!(format.name()));
            o.insert("reader".into(), serde_json::to_value(stats)?);
            o.insert("devices".into(), serde_json::to_value(&devices)?);
            o.insert(
                "plots".into(),
                json!(plots
                    .iter()
                    .map(|p| p.display().to_string())
                    .collect::<Vec<_>>()),
            );
        }
        a.out
            .emit(&format!("{}\n", serde_json::to_string_pretty(&v)?))?;
    } else {
        let mut s = format!("trace {} ({})\n", a.trace.display(), format);
        s.push_str(&human(&analysis));
        let sl = stats_line(&stats);
        if !sl.is_empty() {
            s.push_str(&format!("reader: {sl}\n"));
        }
        for p in &plots {
            s.push_str(&format!("plot: {}\n", p.display()));
        }
        a.out.emit(&s)?;
    }
    Ok(0)
}

fn run_convert(a: ConvertArgs) -> anyhow::Result<u8> {
    let from = parse_format(&a.from)?;
    let to = write_format(a.to.as_deref(), &a.output_path, None)?;
    output::check_file_inputs(&a.output_path, "OUT", &[&a.input_path])?;
    a.out.check_inputs(&[&a.input_path, &a.output_path])?;
    let opts = ReadOptions {
        lenient: a.lenient,
        use_queue: a.use_queue,
    };
    let Converted {
        from: format,
        requests: n,
        reader: stats,
        ..
    } = files::convert_file(&a.input_path, from, opts, &a.output_path, to).map_err(file_error)?;
    if a.out.json() {
        let v = json!({
            "input": a.input_path.display().to_string(),
            "output": a.output_path.display().to_string(),
            "from": format.name(),
            "to": to.name(),
            "requests": n,
            "reader": stats,
        });
        a.out
            .emit(&format!("{}\n", serde_json::to_string_pretty(&v)?))?;
    } else {
        let sl = stats_line(&stats);
        a.out.emit(&format!(
            "converted {n} requests: {} ({format}) -> {} ({to}){}\n",
            a.input_path.display(),
            a.output_path.display(),
            if sl.is_empty() {
                String::new()
            } else {
                format!("; {sl}")
            }
        ))?;
    }
    Ok(0)
}

fn opt4(v: Option<f64>) -> String {
    v.map(|v| format!("{v:.4}"))
        .unwrap_or_else(|| "- (no completions)".into())
}

fn human_compare(c: &Comparison) -> String {
    let mut s = format!(
        "A {} requests, B {} requests; matched {} ({:.2}% of A), {} in B not in A\n",
        c.requests_a,
        c.requests_b,
        c.matched,
        c.match_fraction * 100.0,
        c.extra_in_b
    );
    s.push_str(&format!(
        "order agreement {:.4}; inter-arrival error {:.4} (mean signed {}, p99 |error| {})\n",
        c.order_agreement,
        c.interarrival_error,
        ns(c.interarrival_mean_error_ns),
        ns(c.interarrival_abs_error_ns.p99.map(|v| v as f64))
    ));
    s.push_str(&format!(
        "distribution distances (TV): sizes {:.4}, queue depth {}, seek {:.4}, service time {}\n",
        c.distances.sizes,
        opt4(c.distances.queue_depth),
        c.distances.seek_distance,
        opt4(c.distances.service_time)
    ));
    s.push_str(&criteria_lines(&c.criteria));
    if c.differs {
        s.push_str(&format!(
            "DIFFER: {} of the seed's criteria failed\n",
            c.criteria.iter().filter(|x| x.pass == Some(false)).count()
        ));
    } else {
        s.push_str("SAME: every criterion of the seed that could be checked passed\n");
    }
    s
}

/// One line per criterion: verdict, name, figure, limit.
fn criteria_lines(cs: &[Criterion]) -> String {
    let w = cs.iter().map(|c| c.name.chars().count()).max().unwrap_or(0);
    cs.iter()
        .map(|c| {
            format!(
                "  {:4} {:w$}  {}  (limit: {})\n",
                c.verdict(),
                c.name,
                c.figure,
                c.limit
            )
        })
        .collect()
}

fn run_compare(a: CompareArgs) -> anyhow::Result<u8> {
    if !(0.0..=1.0).contains(&a.tolerance) {
        return Err(crate::error::usage(format!(
            "--tolerance {} is outside 0..1 (it is a fraction: 0.05 = 5 %)",
            a.tolerance
        )));
    }
    a.out.check_inputs(&[&a.a, &a.b])?;
    let opts = ReadOptions {
        lenient: a.lenient,
        use_queue: false,
    };
    let c = files::compare_files(
        (&a.a, parse_format(&a.format)?),
        (&a.b, parse_format(&a.format2)?),
        opts,
        a.tolerance,
    )
    .map_err(file_error)?;
    if a.out.json() {
        a.out
            .emit(&format!("{}\n", serde_json::to_string_pretty(&c)?))?;
    } else {
        a.out.emit(&human_compare(&c))?;
    }
    Ok(if c.differs { 1 } else { 0 })
}

fn run_record(a: RecordArgs) -> anyhow::Result<u8> {
    let format = write_format(a.to.as_deref(), &a.output, Some(Format::Native))?;
    let devices: Vec<&Path> = a.devices.iter().map(PathBuf::as_path).collect();
    output::check_file_inputs(&a.output, "--output", &devices)?;
    let duration = match a.duration {
        None => None,
        Some(s) if s.is_finite() && s > 0.0 => Some(Duration::from_secs_f64(s)),
        Some(s) => {
            return Err(crate::error::usage(format!(
                "--duration {s} must be a positive number of seconds"
            )))
        }
    };
    if a.buffer_kb == 0 {
        return Err(crate::error::usage("--buffer-kb must be at least 1"));
    }
    if let Some(max) = record::max_buffer_kb().filter(|&m| a.buffer_kb > m) {
        return Err(crate::error::usage(format!(
            "--buffer-kb {} is more than {max} KiB per CPU (half of this machine's memory over its CPUs); give a smaller buffer",
            a.buffer_kb
        )));
    }
    // Ctrl-C / SIGTERM set the flag; the recorder polls it, then removes
    // its tracefs instance and finishes the trace.
    let stop = crate::signal::stop_flag();
    let opts = record::RecordOptions {
        buffer_kb_per_cpu: a.buffer_kb,
        tracefs: None,
        recorder: a.recorder.parse().map_err(crate::error::usage)?,
    };
    if a.output_format != output::Format::Json && duration.is_none() {
        eprintln!(
            "recording {} devices; press Ctrl-C to stop",
            a.devices.len()
        );
    }
    let summary =
        record::record(&a.devices, &a.output, format, duration, stop, &opts).map_err(|error| {
            file_error(FileError::Trace {
                path: a.output.clone(),
                error,
            })
        })?;
    let out = OutputArgs {
        output_format: a.output_format,
        output: None,
    };
    if out.json() {
        let mut v = serde_json::to_value(&summary)?;
        if let Some(o) = v.as_object_mut() {
            o.insert("output".into(), json!(a.output.display().to_string()));
            o.insert("format".into(), json!(format.name()));
        }
        out.emit(&format!("{}\n", serde_json::to_string_pretty(&v)?))?;
    } else {
        let sl = stats_line(&summary.matching);
        out.emit(&format!(
            "recorded {} requests ({} with completion) in {:.3} s to {} ({format}){}\n",
            summary.requests,
            summary.completed,
            summary.duration_s,
            a.output.display(),
            if sl.is_empty() {
                String::new()
            } else {
                format!("; {sl}")
            }
        ))?;
    }
    if summary.lost_events > 0 {
        eprintln!(
            "drivelab: warning: the kernel lost {} trace events (ring buffer overrun); the trace is incomplete: raise --buffer-kb",
            summary.lost_events
        );
    }
    Ok(0)
}

//! `drivelab season`: bring SSDs to their used, steady state and show fresh
//! vs used. The command line around `drivelab_season`: it parses what was
//! typed into a [`Request`], calls [`drivelab_season::season`] (which
//! refuses and confirms drives as erase does, claims them, and runs the
//! stages), shows a progress line per drive, and prints the result: the
//! rounds with the steady-state verdict, the write series' cliff and the
//! fresh vs used table (or the one JSON result).
//! Exit status: 0 when every drive ran every stage asked for, 1 when any
//! failed or was stopped (its journal is kept for `--resume`), 2 for bad
//! input and refusals, before anything is written.

use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use clap::Args;

use drivelab_erase::plan::Drive;
use drivelab_erase::Consent;
use drivelab_season::result::{DriveSeason, SeasonReport};
use drivelab_season::{Frontend, Options, Request, Stages, Status};

use crate::cmd_devices::human_size;
use crate::error::usage;
use crate::output::OutputArgs;

/// Arguments of `drivelab season`.
#[derive(Args, Debug)]
pub struct SeasonArgs {
    /// Whole drives to season (their data is destroyed).
    #[arg(value_name = "DEV")]
    pub devices: Vec<PathBuf>,
    /// Stages to run, in this order: purge,fill,image,rounds (default all;
    /// image runs only with --image or --image-trace).
    #[arg(long, default_value = "all")]
    pub stages: String,
    /// Purge by this method instead of the strongest the drive offers:
    /// nvme-sanitize, nvme-format, ata-sanitize, scsi-sanitize,
    /// ata-security-erase-enhanced,
    /// ata-security-erase or discard (refused, nothing written, when the
    /// drive cannot).
    #[arg(long, value_name = "METHOD", default_value = "auto")]
    pub purge: String,
    /// Sequential fill passes of 128 KiB writes over every LBA.
    #[arg(long = "fill-passes", default_value_t = 2)]
    pub fill_passes: u32,
    /// An image file written onto the drive sector by sector.
    #[arg(long, value_name = "FILE")]
    pub image: Option<PathBuf>,
    /// A block trace whose writes are replayed onto the drive instead.
    #[arg(long = "image-trace", value_name = "TRACE")]
    pub image_trace: Option<PathBuf>,
    /// The rounds' workload: a preset, a fio job file, or fio options
    /// ("rw=randwrite bs=4k iodepth=32", the default).
    #[arg(long, default_value = drivelab_season::round::DEFAULT_WORKLOAD)]
    pub workload: String,
    /// Length of each round (s, m, h; default seconds).
    #[arg(long = "round-time", default_value = "60")]
    pub round_time: String,
    /// Most rounds before giving up on steady state (PTS: 25).
    #[arg(long = "max-rounds", default_value_t = 25)]
    pub max_rounds: usize,
    /// Run this workload right after the purge and again after seasoning,
    /// and print both side by side (preset, job file or fio options).
    #[arg(long, value_name = "WORKLOAD")]
    pub compare: Option<String>,
    /// Length of each compare run (default: --round-time).
    #[arg(long = "compare-time")]
    pub compare_time: Option<String>,
    /// Write SVG plots (convergence, steady-state window, fresh vs used,
    /// whole-drive write series) into this directory.
    #[arg(long, value_name = "DIR")]
    pub plots: Option<PathBuf>,
    /// Where journals and purge certificates go.
    #[arg(long = "state-dir", value_name = "DIR", default_value = ".")]
    pub state_dir: PathBuf,
    /// Continue an interrupted season from its journal (in --state-dir).
    #[arg(long)]
    pub resume: bool,
    /// Write even to a drive that is partitioned or holds a signature
    /// (never to one whose bytes are in use: mounted, swap, held, under a
    /// mounted or held device, or the running system's).
    #[arg(long)]
    pub force: bool,
    /// Confirm that the data on the drives may be destroyed.
    #[arg(long)]
    pub yes: bool,
    /// The serial of a drive to season (its path when it has no serial);
    /// once per drive.
    #[arg(long = "confirm-serial", value_name = "SERIAL")]
    pub confirm_serial: Vec<String>,
    /// Serve live figures for Prometheus at http://ADDR/metrics while the
    /// drives are seasoned (ADDR: PORT on loopback, or HOST:PORT); see
    /// docs/metrics.md.
    #[arg(long = "metrics-listen", value_name = "ADDR")]
    pub metrics_listen: Option<String>,
    /// With --metrics-listen: keep serving the final figures for TIME
    /// (s when bare) after the season ends.
    #[arg(long = "metrics-linger", value_name = "TIME")]
    pub metrics_linger: Option<String>,
    #[command(flatten)]
    pub out: OutputArgs,
}

fn seconds(what: &str, s: &str) -> anyhow::Result<f64> {
    drivelab_workload::parse_duration(what, s)
        .map(|d| d.as_secs_f64())
        .map_err(|e| usage(e.to_string()))
}

/// Run the subcommand.
pub fn run(a: SeasonArgs) -> anyhow::Result<u8> {
    crate::output::check_dir(&a.state_dir, "--state-dir")?;
    a.out.check()?;
    if a.devices.is_empty() {
        return Err(usage(
            "no drives given: name the whole drives to season, e.g. drivelab season /dev/sdb --yes --confirm-serial SERIAL",
        ));
    }
    let stages = Stages::parse(&a.stages).map_err(|e| usage(e.to_string()))?;
    let purge = match a.purge.as_str() {
        "auto" => None,
        m => Some(
            m.parse::<drivelab_erase::Method>()
                .ok()
                .filter(|m| drivelab_season::purge::PURGE_METHODS.contains(&m.name()))
                .ok_or_else(|| {
                    usage(format!(
                        "--purge {m}: not a purge method; use auto or one of {}",
                        drivelab_season::purge::PURGE_METHODS.join(", ")
                    ))
                })?,
        ),
    };
    let round_seconds = seconds("--round-time", &a.round_time)?;
    let compare_seconds = match &a.compare_time {
        Some(s) => seconds("--compare-time", s)?,
        None => round_seconds,
    };
    let req = Request {
        devices: a.devices.clone(),
        options: Options {
            stages,
            purge,
            image_required: a.stages.split(',').any(|s| s.trim() == "image"),
            fill_passes: a.fill_passes,
            workload: a.workload.clone(),
            round_seconds,
            max_rounds: a.max_rounds,
            image: a.image.clone(),
            image_trace: a.image_trace.clone(),
            compare: a.compare.clone(),
            compare_seconds,
            state_dir: a.state_dir.clone(),
            plots: a.plots.clone(),
            resume: a.resume,
            command_line: std::env::args().collect::<Vec<_>>().join(" "),
            version: env!("CARGO_PKG_VERSION").to_string(),
        },
        consent: Consent {
            force: a.force,
            yes: a.yes,
            confirm: a.confirm_serial.clone(),
            restore_native_max: false,
        },
    };
    let live = crate::metrics::Live::from_args(
        a.metrics_listen.as_deref(),
        a.metrics_linger.as_deref(),
        "season",
        !a.out.json(),
    )?;
    let fe = Terminal {
        json: a.out.json(),
        tty: std::io::stderr().is_terminal() && !a.out.json(),
        live: live.as_ref(),
    };
    let report = drivelab_season::season(&req, &fe).map_err(|e| {
        if e.is_refusal() {
            usage(e.to_string())
        } else {
            anyhow::Error::new(e).context("season")
        }
    })?;
    if let Some(l) = &live {
        l.settle_season();
    }
    let printed = print_report(&a.out, &report)?;
    for d in &report.drives {
        if let Some(e) = &d.error {
            eprintln!("drivelab: {}: {e}", d.identity.device);
        }
    }
    let code = if report.all_done() { 0 } else { 1 };
    crate::cmd_store::save_printed(
        drivelab_store::Kind::Season,
        &printed,
        a.out.json(),
        &report,
        code,
        serde_json::json!({ "arguments": std::env::args().skip(2).collect::<Vec<_>>() }),
        Vec::new(),
    )?;
    if let Some(l) = &live {
        l.linger(crate::signal::stop_flag());
    }
    Ok(code)
}

struct Terminal<'a> {
    json: bool,
    tty: bool,
    /// `--metrics-listen`'s endpoint.
    live: Option<&'a crate::metrics::Live>,
}

impl Frontend for Terminal<'_> {
    fn ask(&self, d: &Drive, _token: &str) -> Option<std::io::Result<String>> {
        crate::cmd_erase::ask_to_confirm("Season", ": its data will be destroyed", d)
    }

    fn starting(&self, _drives: &[Drive]) -> &AtomicBool {
        crate::signal::stop_flag()
    }

    fn watch(&self, status: &[Arc<Status>], finished: &AtomicBool) {
        std::thread::scope(|s| {
            if let Some(l) = self.live {
                s.spawn(|| crate::metrics::watch_season(l, status, finished));
            }
            if !self.json {
                self.draw(status, finished);
            }
        });
    }
}

impl Terminal<'_> {
    /// The progress lines until `finished` is set.
    fn draw(&self, status: &[Arc<Status>], finished: &AtomicBool) {
        let mut err = std::io::stderr();
        let mut drawn = 0usize;
        let mut last_plain = Instant::now();
        let mut last_stage: Vec<String> = status.iter().map(|s| s.stage()).collect();
        loop {
            let done = finished.load(Ordering::Relaxed);
            if self.tty {
                let mut s = String::new();
                if drawn > 0 {
                    s.push_str(&format!("\x1b[{drawn}A"));
                }
                for st in status {
                    s.push_str("\x1b[2K");
                    s.push_str(&st.line());
                    s.push('\n');
                }
                drawn = status.len();
                let _ = err.write_all(s.as_bytes());
            } else {
                let periodic = last_plain.elapsed() >= Duration::from_secs(5);
                for (i, st) in status.iter().enumerate() {
                    let now = st.stage();
                    if now != last_stage[i] || periodic {
                        let _ = writeln!(err, "{}", st.line());
                        last_stage[i] = now;
                    }
                }
                if periodic {
                    last_plain = Instant::now();
                }
            }
            if done {
                break;
            }
            std::thread::sleep(Duration::from_millis(250));
        }
    }
}

fn mib(b: f64) -> String {
    format!("{:.1} MiB/s", b / 1048576.0)
}

fn us(ns: f64) -> String {
    format!("{:.1} us", ns / 1000.0)
}

/// Print the report; returns what was printed.
fn print_report(out: &OutputArgs, r: &SeasonReport) -> anyhow::Result<String> {
    if out.json() {
        let v = serde_json::to_value(r)?;
        let text = format!("{}\n", serde_json::to_string_pretty(&v)?);
        out.emit(&text)?;
        return Ok(text);
    }
    let mut s = String::new();
    for d in &r.drives {
        s.push_str(&drive_text(d));
    }
    s.push_str(&format!("complete time: {:.1}s\n", r.complete_seconds));
    out.emit(&s)?;
    Ok(s)
}

fn drive_text(d: &DriveSeason) -> String {
    let id = &d.identity;
    let mut s = format!(
        "\n{}  {} serial {} firmware {}  {}  {:?}{}\n",
        id.device,
        id.model.as_deref().unwrap_or("-"),
        id.serial.as_deref().unwrap_or("-"),
        id.firmware.as_deref().unwrap_or("-"),
        human_size(id.capacity_bytes),
        d.state,
        if d.resumed { " (resumed)" } else { "" }
    );
    if let Some(p) = &d.purge {
        s.push_str(&format!("  purge: {} ({:.1}s)\n", p.result, p.seconds));
    }
    if let Some(f) = &d.fill {
        for p in &f.pass_results {
            s.push_str(&format!(
                "  fill pass {}: {} in {:.1}s, {}\n",
                p.pass,
                human_size(p.bytes),
                p.seconds,
                mib(p.bw_bytes)
            ));
        }
    }
    if let Some(w) = &d.write_series {
        match &w.cliff {
            Some(c) => s.push_str(&format!(
                "  write cliff after {} ({:.1}% of the drive): {} -> {}\n",
                human_size(c.at_bytes),
                c.at_pct,
                mib(c.detector.plateau),
                mib(c.detector.after)
            )),
            None => s.push_str(&format!(
                "  no write cliff in {} points of at least {} and 10 ms\n",
                w.points.len(),
                human_size(w.bucket_bytes)
            )),
        }
    }
    if let Some(i) = &d.image {
        s.push_str(&format!(
            "  image ({}) {}: {} in {:.1}s\n",
            i.kind,
            i.source.display(),
            human_size(i.bytes),
            i.seconds
        ));
    }
    if !d.rounds.is_empty() {
        s.push_str(&format!(
            "  {:>5} {:>12} {:>14} {:>12} {:>12}\n",
            "ROUND", "IOPS", "BW", "LAT MEAN", "LAT P99"
        ));
        for r in &d.rounds {
            s.push_str(&format!(
                "  {:>5} {:>12.0} {:>14} {:>12} {:>12}\n",
                r.round,
                r.metrics.iops,
                mib(r.metrics.bw_bytes),
                us(r.metrics.lat_mean_ns),
                us(r.metrics.lat_p99_ns)
            ));
        }
    }
    if let Some(v) = &d.steady_state {
        s.push_str(&format!(
            "  steady state: {} ({})\n",
            if v.steady { "REACHED" } else { "not reached" },
            v.reason
        ));
        if let Some(w) = &v.window {
            s.push_str(&format!(
                "    window rounds {}-{}: average {:.0}, excursion {:.0} (limit {:.0}), slope {:.1}/round (excursion {:.0}, limit {:.0})\n",
                w.first_round, w.last_round, w.average, w.data_excursion, w.data_excursion_limit, w.slope, w.slope_excursion, w.slope_excursion_limit
            ));
        }
    }
    if let Some(c) = &d.compare {
        s.push_str(&format!(
            "  fresh vs used ({}){}:\n  {:<12} {:>14} {:>14} {:>9}\n",
            c.workload,
            if d.fresh {
                ""
            } else {
                " (NOT purged: 'fresh' is the state before seasoning)"
            },
            "METRIC",
            "FRESH",
            "USED",
            "CHANGE"
        ));
        for ch in &c.change {
            let (f, u) = match ch.metric.as_str() {
                "bw_bytes" => (mib(ch.fresh), mib(ch.used)),
                "lat_mean_ns" | "lat_p99_ns" => (us(ch.fresh), us(ch.used)),
                _ => (format!("{:.0}", ch.fresh), format!("{:.0}", ch.used)),
            };
            s.push_str(&format!(
                "  {:<12} {:>14} {:>14} {:>+8.1}%\n",
                ch.metric, f, u, ch.change_pct
            ));
        }
    }
    for p in &d.plots {
        s.push_str(&format!("  plot {}\n", p.display()));
    }
    if let Some(h) = &d.health {
        for l in h.lines("health") {
            s.push_str(&format!("  {l}\n"));
        }
    }
    s
}

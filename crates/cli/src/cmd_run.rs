//! `drivelab run`: a workload from fio-style options, a fio job file or an
//! Iometer preset. With no target it runs on a scratch file in the current
//! directory (no root needed) and removes it afterwards.
//!
//! The options are parsed here by hand rather than by clap so that the one
//! declaration table in `drivelab_workload::spec::options` drives the command line,
//! the job-file parser and the help text alike.

use std::io::IsTerminal;
use std::path::PathBuf;

use clap::Args;
use drivelab_report::{Exporter, Json, JsonPlus, Terse, Text};
use drivelab_workload::run::RunError;
use drivelab_workload::spec::options::{lookup, OptionKind};
use drivelab_workload::spec::{jobfile, presets};
use drivelab_workload::JobSpec;
use drivelab_workload::{
    execute_with_status, plan, Plan, PlanError, PlanOptions, Progress, StatusOptions,
};

use crate::error::usage;
use crate::output::OutputArgs;

/// `drivelab run [JOBFILE …] [--preset NAME] [--OPTION=VALUE …]`
#[derive(Args, Debug)]
#[command(disable_help_flag = true)]
pub struct RunArgs {
    /// fio-style options, an optional job file and drivelab's own flags; see `drivelab run --help`.
    #[arg(trailing_var_arg = true, allow_hyphen_values = true, num_args = 0..)]
    pub args: Vec<String>,
}

/// The scratch target: with no job file, no --name and no --filename, a file of this
/// name and size in the current directory, removed afterwards.
pub const SCRATCH_FILE: &str = "drivelab-scratch.bin";
const SCRATCH_SIZE: &str = "256m";

/// The preset a bare `drivelab run` (no job file, no --preset, no workload
/// option) runs; also `--preset quick`.
pub const QUICK: &str = "quick";
/// What [`QUICK`] sets, as the user would type it.
pub const QUICK_OPTIONS: &[(&str, &str)] = &[
    ("rw", "randrw"),
    ("rwmixread", "70"),
    ("bs", "4k"),
    ("iodepth", "16"),
    ("size", SCRATCH_SIZE),
    ("runtime", "5"),
    ("time_based", "1"),
];

/// One of `run`'s own flags (not a workload option): name, the value it
/// takes (None for a bare flag), its choices when fixed, and help.
pub struct RunFlag {
    /// The flag without its dashes.
    pub name: &'static str,
    /// What the value is, e.g. "FILE" (None: takes no value).
    pub value: Option<&'static str>,
    /// The values it accepts, when a fixed set.
    pub choices: &'static [&'static str],
    /// One line of help.
    pub help: &'static str,
}

/// `run`'s own flags, for the help, completions and man page.
pub const RUN_FLAGS: &[RunFlag] = &[
    RunFlag { name: "preset", value: Some("NAME"), choices: &[], help: "an Iometer access specification, or quick (what a bare `drivelab run` runs)" },
    RunFlag { name: "output-format", value: Some("FMT"), choices: &["normal", "json", "json+", "terse", "normal,json"], help: "normal, json (fio's field names), json+ (with fio's latency bins), terse (fio's terse v3), or several: normal,json" },
    RunFlag { name: "minimal", value: None, choices: &[], help: "terse v3 lines (fio's --minimal)" },
    RunFlag { name: "output", value: Some("FILE"), choices: &[], help: "write the results to FILE" },
    RunFlag { name: "eta", value: Some("WHEN"), choices: &["auto", "always", "never"], help: "the progress line on stderr: auto (when stderr is a terminal), always, never [default: auto]" },
    RunFlag { name: "eta-newline", value: Some("TIME"), choices: &[], help: "end the progress line with a newline every TIME (s when bare) instead of overwriting it" },
    RunFlag { name: "status-interval", value: Some("TIME"), choices: &[], help: "every TIME (s when bare, e.g. 1, 500ms, 1m; at least 1ms) print every job's full statistics so far in the chosen format(s), then the final result" },
    RunFlag { name: "metrics-listen", value: Some("ADDR"), choices: &[], help: crate::metrics::LISTEN_HELP },
    RunFlag { name: "metrics-linger", value: Some("TIME"), choices: &[], help: crate::metrics::LINGER_HELP },
    RunFlag { name: "force", value: None, choices: &[], help: "write to a device that is partitioned or holds a signature (never to one whose bytes are in use, nor the running system)" },
    RunFlag { name: "parse-only", value: None, choices: &[], help: "check the options and job file, run nothing (fio's --parse-only)" },
    RunFlag { name: "store", value: Some("PATH|URL"), choices: &[], help: "keep the result in this store (default: $DRIVELAB_STORE, else ~/.local/share/drivelab/results.db)" },
    RunFlag { name: "no-store", value: None, choices: &[], help: "do not keep the result" },
    RunFlag { name: "help", value: None, choices: &[], help: "this text" },
];

/// The names `--preset` takes: the Iometer presets and [`QUICK`].
pub fn preset_names() -> Vec<&'static str> {
    std::iter::once(QUICK)
        .chain(presets::PRESETS.iter().map(|p| p.name))
        .collect()
}

/// The quick preset as options on one line.
pub fn quick_line() -> String {
    QUICK_OPTIONS
        .iter()
        .map(|(k, v)| format!("--{k}={v}"))
        .collect::<Vec<_>>()
        .join(" ")
}

/// The paragraph on defaults, shared by the help and the man page.
pub fn defaults_text() -> String {
    format!(
        "Defaults: every workload option not given has fio's default, listed below.
With no job file, no --name and no --filename, the target is a scratch file
'{SCRATCH_FILE}' in the current directory (--size={SCRATCH_SIZE} unless given),
removed after the run. With --name (an fio command-line job) the files are
fio's: NAME.0.0 and on, in the current directory or --directory, kept.
Several job files run one after another, each a new group, as in fio.
With no job file, no --preset and no workload option at all,
`drivelab run` runs the preset {QUICK}:
  {QUICK}: {}",
        quick_line()
    )
}

fn help() -> String {
    let mut flags = String::new();
    for f in RUN_FLAGS {
        let left = match f.value {
            Some(v) => format!("--{} {v}", f.name),
            None => format!("--{}", f.name),
        };
        flags.push_str(&format!("  {left:<26} {}\n", f.help));
    }
    let mut fio = String::new();
    for f in crate::fio_flags::FIO_FLAGS {
        let left = match f.value {
            Some(true) => format!("--{} V", f.name),
            Some(false) => format!("--{}[=V]", f.name),
            None => format!("--{}", f.name),
        };
        let what = match f.handling {
            crate::fio_flags::Handling::Refused(why) => format!("refused: {why}"),
            _ => f.help.to_string(),
        };
        fio.push_str(&format!("  {left:<26} {what}\n"));
    }
    format!(
        "Run a workload. Options take fio's names and units (k = 1024).

Usage: drivelab run [JOBFILE.fio ...] [--preset NAME] [--OPTION=VALUE ...]

{}

Presets (--preset NAME): {}

drivelab options:
{flags}
fio's other flags:
{fio}
Workload options (also valid as job-file keys):
{}",
        defaults_text(),
        preset_names().join(", "),
        drivelab_workload::spec::options::help_text()
    )
}

/// Parsed command line of `run`.
#[derive(Default)]
struct Parsed {
    out: OutputArgs,
    force: bool,
    preset: Option<String>,
    /// The job files, run one after another (each a new group, as fio).
    jobfiles: Vec<PathBuf>,
    /// fio's own flags beside drivelab's ([`crate::fio_flags`]).
    fio: crate::fio_flags::Asked,
    /// fio options in order: (key, value).
    opts: Vec<(String, Option<String>)>,
    help: bool,
    parse_only: bool,
    /// `--store` after `run` (the global flag, parsed here with the rest).
    store: Option<String>,
    /// `--no-store` after `run`.
    no_store: bool,
    formats: RunFormats,
    /// `--eta`: when to show the progress line.
    eta: crate::progress::Eta,
    /// `--eta-newline`: end the line with a newline this often.
    eta_newline: Option<std::time::Duration>,
    /// `--status-interval`: print the statistics so far this often.
    status_interval: Option<std::time::Duration>,
    /// `--metrics-listen`: where to serve live figures.
    metrics_listen: Option<String>,
    /// `--metrics-linger`: how long to keep serving after the run.
    metrics_linger: Option<std::time::Duration>,
}

/// The output formats asked for (`--output-format=normal,json`,
/// `--minimal`); printed in fio's order: terse, then JSON, then text.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
struct RunFormats {
    normal: bool,
    json: bool,
    json_plus: bool,
    terse: bool,
}

impl RunFormats {
    fn parse(v: &str) -> anyhow::Result<RunFormats> {
        let mut f = RunFormats::default();
        for name in v.split(',') {
            match name.trim() {
                "normal" => f.normal = true,
                "json" => f.json = true,
                "json+" => f.json_plus = true,
                "terse" => f.terse = true,
                other => {
                    return Err(usage(format!(
                        "--output-format: '{other}' is not a format; use normal, json, json+ or terse, or several separated by commas (normal,json)"
                    )))
                }
            }
        }
        Ok(f)
    }

    /// Only machine-readable output (no progress line, no notes on stderr).
    fn machine(&self) -> bool {
        !self.wants_normal()
    }

    /// Whether the normal text is among the formats.
    pub(crate) fn wants_normal(&self) -> bool {
        self.normal || !(self.json || self.json_plus || self.terse)
    }

    /// The whole output for `report`.
    fn render(&self, report: &drivelab_report::RunReport) -> String {
        let mut out = String::new();
        if self.terse {
            out.push_str(&Terse.render(report));
        }
        if self.json_plus {
            out.push_str(&JsonPlus.render(report));
        } else if self.json {
            out.push_str(&Json.render(report));
        }
        if self.wants_normal() {
            out.push_str(&engine_note(report));
            out.push_str(&Text.render(report));
        }
        out
    }
}

fn parse_args(args: &[String]) -> anyhow::Result<Parsed> {
    let mut p = Parsed::default();
    let mut i = 0;
    while i < args.len() {
        let a = &args[i];
        i += 1;
        let Some(body) = a.strip_prefix("--") else {
            if a == "-h" {
                p.help = true;
                continue;
            }
            if a.starts_with('-') {
                return Err(usage(format!("unknown option '{a}'; options look like --rw=randread (see 'drivelab run --help')")));
            }
            p.jobfiles.push(PathBuf::from(a));
            continue;
        };
        let (key, inline) = match body.split_once('=') {
            Some((k, v)) => (k.to_string(), Some(v.to_string())),
            None => (body.to_string(), None),
        };
        // Whether an option without `=` is followed by another option (or
        // nothing), for the options that may stand bare.
        let next_is_option = args.get(i).is_none_or(|a| a.starts_with("--"));
        let mut take_value = |what: &str| -> anyhow::Result<String> {
            if let Some(v) = &inline {
                return Ok(v.clone());
            }
            if i < args.len() {
                i += 1;
                return Ok(args[i - 1].clone());
            }
            Err(usage(format!("--{key} needs a value ({what})")))
        };
        match key.as_str() {
            "help" => p.help = true,
            "force" => p.force = true,
            "parse-only" => p.parse_only = true,
            "no-store" => p.no_store = true,
            "store" => p.store = Some(take_value("a file path or postgres://…")?),
            "preset" => p.preset = Some(take_value("a preset name")?),
            "output-format" => {
                let v = take_value("normal, json, json+ or terse, or several: normal,json")?;
                p.formats = RunFormats::parse(&v)?;
            }
            "minimal" => p.formats.terse = true,
            "eta" => p.eta = crate::progress::Eta::parse(&take_value("always, never or auto")?)?,
            "eta-newline" => {
                let v = take_value("a time, e.g. 2 or 500ms")?;
                p.eta_newline = Some(crate::progress::parse_interval("--eta-newline", &v)?);
            }
            "status-interval" => {
                let v = take_value("a time, e.g. 1 or 500ms")?;
                p.status_interval = Some(crate::status::parse_status_interval(&v)?);
            }
            "metrics-listen" => {
                p.metrics_listen = Some(take_value("an address: PORT or HOST:PORT")?)
            }
            "metrics-linger" => {
                let v = take_value("a time, e.g. 5 or 1m")?;
                p.metrics_linger = Some(crate::progress::parse_interval("--metrics-linger", &v)?);
            }
            "output" => p.out.output = Some(PathBuf::from(take_value("a file path")?)),
            _ => {
                // fio's own flags beside drivelab's, then the job options.
                if let Some(f) = crate::fio_flags::find(&key) {
                    let value = match f.value {
                        Some(true) => Some(take_value(f.help)?),
                        Some(false) | None => inline.clone(),
                    };
                    p.fio.take(f, value)?;
                    continue;
                }
                let decl = lookup(&key).map_err(|e| usage(e.to_string()))?;
                let value = match (decl.kind, inline.clone()) {
                    (_, Some(v)) => Some(v),
                    (OptionKind::Bool, None) => {
                        // A bare flag, or --flag 0/1.
                        match args.get(i).map(String::as_str) {
                            Some("0") | Some("1") => {
                                i += 1;
                                Some(args[i - 1].clone())
                            }
                            _ => None,
                        }
                    }
                    // A bare --write_bw_log: the logs are named after the job.
                    (_, None) if decl.name.starts_with("write_") && next_is_option => None,
                    (_, None) => Some(take_value("see 'drivelab run --help'")?),
                };
                p.opts.push((decl.name.to_string(), value));
            }
        }
    }
    Ok(p)
}

/// The line saying which drivelab engine ran each fio engine name given,
/// then one line for each engine option drivelab's engine does regardless
/// (empty when there is nothing to say).
fn engine_note(r: &drivelab_report::RunReport) -> String {
    let mut out = String::new();
    if !r.ioengine_map.is_empty() {
        let pairs: Vec<String> = r
            .ioengine_map
            .iter()
            .map(|(fio, dl)| format!("{fio} runs on drivelab's {dl}"))
            .collect();
        out = format!("ioengine: {}\n", pairs.join(", "));
    }
    for n in &r.ioengine_notes {
        out.push_str(&format!("ioengine: {n}\n"));
    }
    out
}

/// The jobs a run asked for.
struct Jobs {
    /// Each job and whether it is a stonewall.
    list: Vec<(JobSpec, bool)>,
    /// The run is on the scratch file (no filename given).
    scratch: bool,
    /// The run is the quick preset.
    quick: bool,
}

/// The run's jobs: from a job file, or one job from the options, with the
/// preset and the command line's options set.
fn jobs_of(p: &Parsed) -> anyhow::Result<Jobs> {
    let mut jobs: Vec<(JobSpec, bool)> = match p.jobfiles.as_slice() {
        [_, ..] => files_jobs(p)?,
        // `--name`: an fio command-line job, which starts from fio's
        // defaults as a job file's sections do.
        [] if p.opts.iter().any(|(k, _)| k == "name") => {
            vec![(jobfile::fio_defaults(), false)]
        }
        [] => vec![(JobSpec::default(), false)],
    };
    let given = |k: &str| p.opts.iter().any(|(key, _)| key == k);
    // `--name` makes the options an fio command-line job, whose files fio
    // names and keeps (`NAME.0.0` in the current directory or
    // `--directory`); a run fio would not take (no job file, no name) gets
    // the scratch file.
    let scratch = p.jobfiles.is_empty() && !given("filename") && !given("name");
    // The bare run is the quick preset; anything else starts from fio's
    // defaults (see `defaults_text`).
    let quick = p.preset.as_deref() == Some(QUICK)
        || (p.preset.is_none() && p.jobfiles.is_empty() && p.opts.is_empty());
    for (job, _) in jobs.iter_mut() {
        if quick {
            for (k, v) in QUICK_OPTIONS {
                job.set(k, Some(v)).map_err(|e| usage(e.to_string()))?;
            }
        } else if let Some(name) = &p.preset {
            presets::find(name)
                .map_err(|e| usage(e.to_string()))?
                .apply(job);
        }
        if scratch {
            job.set("filename", Some(SCRATCH_FILE))
                .map_err(|e| usage(e.to_string()))?;
            if !quick && !given("size") {
                job.set("size", Some(SCRATCH_SIZE))
                    .map_err(|e| usage(e.to_string()))?;
            }
        }
        // fio reads kb_base before the other options (it decides how
        // their sizes read), wherever it is given.
        let mut opts: Vec<&(String, Option<String>)> = p.opts.iter().collect();
        opts.sort_by_key(|(k, _)| k != "kb_base");
        for (k, v) in opts {
            job.set(k, v.as_deref()).map_err(|e| usage(e.to_string()))?;
        }
        if p.jobfiles.is_empty() && given("name") {
            jobfile::fio_job_rules(job, &given);
        }
        // fio: a job file's time_based without a runtime is a warning, and
        // the job runs by size (fio's examples/e4defrag2.fio has one).
        if !p.jobfiles.is_empty() && job.time_based && job.runtime.is_none() {
            if p.fio.warnings_fatal {
                return Err(usage(format!(
                    "job '{}': time_based needs a runtime (--warnings-fatal makes this an error); give runtime= or drop time_based",
                    job.name
                )));
            }
            eprintln!(
                "drivelab: job '{}': time_based needs a runtime; running it by size, as fio does",
                job.name
            );
            job.time_based = false;
        }
    }
    Ok(Jobs {
        list: jobs,
        scratch,
        quick,
    })
}

/// The jobs of the job files, in order: each file after the first starts a
/// new group (its first job waits for all before it), as fio runs several
/// job files; with `--section`, only the sections named.
fn files_jobs(p: &Parsed) -> anyhow::Result<Vec<(JobSpec, bool)>> {
    let mut jobs = Vec::new();
    for (i, path) in p.jobfiles.iter().enumerate() {
        let mut first = i > 0;
        for j in jobfile::read_file(path).map_err(|e| usage(e.to_string()))? {
            let s = &p.fio.sections;
            if !s.is_empty() && !s.contains(&j.spec.name) {
                continue;
            }
            jobs.push((j.spec, j.stonewall || std::mem::take(&mut first)));
        }
    }
    if jobs.is_empty() && !p.fio.sections.is_empty() {
        return Err(usage(format!(
            "--section {}: no such section in the job file(s); give a section's name, the text between [ and ]",
            p.fio.sections.join(", ")
        )));
    }
    for (j, _) in jobs.iter_mut() {
        j.aux_path = p.fio.aux_path.clone();
    }
    Ok(jobs)
}

/// Keep the run in the result store: what was printed, and its JSON.
fn keep(p: &Parsed, report: &drivelab_report::RunReport, text: &str, code: u8) {
    // What was printed is the JSON to keep when it was JSON alone; else the
    // printed text is kept with the JSON rendering beside it.
    let only_json = p.formats
        == RunFormats {
            json: true,
            ..RunFormats::default()
        };
    let rendered;
    let (json, printed_text) = if only_json {
        (text, None)
    } else {
        rendered = Json.render(report);
        (rendered.as_str(), Some(text))
    };
    crate::cmd_store::save(crate::cmd_store::Outcome {
        kind: drivelab_store::Kind::Run,
        json,
        text: printed_text,
        exit_status: code,
        options: serde_json::json!({
            "jobs": report.jobs.iter().map(|j| &j.job_options).collect::<Vec<_>>(),
        }),
        artifacts: Vec::new(),
    });
}

/// fio's progress line for the planned jobs: each job's state letter, and
/// the directions (read, write, trim) any of them moves.
fn progress_display(
    planned: &Plan,
    newline: Option<std::time::Duration>,
) -> crate::progress::Display {
    let letters: Vec<char> = planned
        .jobs
        .iter()
        .map(|j| crate::progress::state_letter(j.spec.rw.name()))
        .collect();
    let trims = |j: &drivelab_workload::plan::PlannedJob| j.spec.rw.name().contains("trim");
    let dirs = [
        planned
            .jobs
            .iter()
            .any(|j| !trims(j) && j.spec.access_lines().iter().any(|l| l.read_pct > 0)),
        planned.jobs.iter().any(|j| j.writes),
        planned.jobs.iter().any(trims),
    ];
    crate::progress::Display::new(letters, dirs, newline)
}

/// Print `text` (written, not printed: a closed pipe must not panic) and
/// end the run with status 0.
fn print_and_stop(text: &str) -> anyhow::Result<u8> {
    let _ = std::io::Write::write_all(&mut std::io::stdout(), text.as_bytes());
    Ok(0)
}

/// fio's `--readonly`: a job that writes or trims is refused before
/// anything runs.
fn refuse_writes(planned: &Plan) -> anyhow::Result<()> {
    match planned
        .jobs
        .iter()
        .find(|j| j.writes || j.spec.rw.name().contains("trim"))
    {
        Some(j) => Err(usage(format!(
            "job '{}' writes or trims (rw={}), and --readonly refuses that; drop --readonly or make the job read",
            j.spec.name,
            j.spec.rw.name()
        ))),
        None => Ok(()),
    }
}

/// What fio's printing flags print instead of a run (None: run).
fn early_show(p: &Parsed) -> anyhow::Result<Option<String>> {
    use crate::fio_flags::{self, Show};
    Ok(match &p.fio.show {
        Some(Show::Version) => Some(format!("drivelab-{}\n", env!("CARGO_PKG_VERSION"))),
        Some(Show::CmdHelp(which)) => Some(fio_flags::cmd_help(which)?),
        Some(Show::EngHelp(e)) => Some(fio_flags::eng_help(e.as_deref())?),
        Some(Show::CrcTest(w)) => Some(fio_flags::crc_test(w.as_deref())?),
        Some(Show::Cmd) | None => None,
    })
}

/// Run the subcommand.
pub fn run(a: RunArgs) -> anyhow::Result<u8> {
    let p = parse_args(&a.args)?;
    if p.help {
        // Written, not printed: `drivelab run --help | head` must not panic.
        let _ = std::io::Write::write_all(&mut std::io::stdout(), help().as_bytes());
        return Ok(0);
    }
    if let Some(text) = early_show(&p)? {
        return print_and_stop(&text);
    }
    crate::cmd_store::choose(p.store.clone(), p.no_store);
    crate::cmd_store::check()?;
    // Where the results go, checked before anything runs.
    p.out.check()?;
    let Jobs {
        list: jobs,
        scratch,
        quick,
    } = jobs_of(&p)?;
    if p.fio.show == Some(crate::fio_flags::Show::Cmd) {
        let specs: Vec<JobSpec> = jobs.iter().map(|(j, _)| j.clone()).collect();
        return print_and_stop(&crate::fio_flags::show_cmd(&specs));
    }
    if p.parse_only {
        drivelab_workload::plan::planner::check(&jobs).map_err(|e| usage(e.to_string()))?;
        return Ok(0);
    }
    // The endpoint is bound before any I/O: an address in use is bad input.
    let live = crate::metrics::Live::start(
        p.metrics_listen.as_deref(),
        p.metrics_linger,
        "run",
        !p.formats.machine(),
    )?;
    let scratch_path = PathBuf::from(SCRATCH_FILE);
    let scratch_existed = scratch && scratch_path.exists();
    // Every plan error is in what was asked: bad input, nothing written.
    let planned = plan(&jobs, &PlanOptions { force: p.force })
        .map_err(|e: PlanError| usage(e.to_string()))?;
    if p.fio.readonly {
        refuse_writes(&planned)?;
    }
    // The run's inputs (its targets and job file) are never an output.
    let mut inputs: Vec<&std::path::Path> =
        planned.targets.iter().map(|t| t.path.as_path()).collect();
    inputs.extend(p.jobfiles.iter().map(PathBuf::as_path));
    p.out.check_inputs(&inputs)?;
    // fio's log files (write_*_log, write_iolog), checked like --output
    // before any I/O.
    for (i, j) in planned.jobs.iter().enumerate() {
        for path in j.spec.logs.paths(&j.spec.name, i + 1) {
            crate::output::check_file_inputs(&path, "log file", &inputs)?;
        }
        if let Some(path) = &j.spec.files.iolog {
            crate::output::check_file_inputs(path.as_ref(), "--write_iolog", &inputs)?;
        }
    }
    let stop = crate::signal::stop_flag();
    let show_progress = p
        .eta
        .show(std::io::stderr().is_terminal(), p.formats.machine());
    let display = std::cell::RefCell::new(progress_display(&planned, p.eta_newline));
    let mut progress = |pr: &Progress| {
        if show_progress {
            display.borrow_mut().update(pr);
        }
    };
    let mut sink = crate::status::Sink::new(p.out.output.clone(), p.formats.wants_normal());
    // With metrics, a snapshot at least every second refreshes them; the
    // user's own snapshots are every n-th of those.
    let (every, per_user) = match &live {
        Some(_) => {
            let (t, n) = crate::metrics::ticks(p.status_interval);
            (Some(t), n)
        }
        None => (p.status_interval, 1),
    };
    let mut ticked = 0u32;
    let mut on_status = |r: &drivelab_report::RunReport| {
        if let Some(l) = &live {
            l.publish(drivelab_metrics::model::run::families(r, false));
        }
        ticked += 1;
        if per_user == 0 || ticked % per_user != 0 {
            return;
        }
        if p.out.file().is_none() {
            // The snapshot goes where the progress line is drawn.
            display.borrow_mut().finish();
        }
        sink.snapshot(&p.formats.render(r));
    };
    let status = every.map(|every| StatusOptions {
        every,
        on_status: &mut on_status,
    });
    if scratch && !p.formats.machine() {
        if quick && p.preset.is_none() {
            eprintln!("drivelab: no options given; running the {QUICK} preset ({}) on the scratch file ./{SCRATCH_FILE} (removed afterwards)", quick_line());
        } else {
            eprintln!("drivelab: no --name or --filename given; running on the scratch file ./{SCRATCH_FILE} (removed afterwards)");
        }
    }
    let ended = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let trigger = p.fio.trigger.watch(stop, ended.clone());
    let result = execute_with_status(&planned, stop, &mut progress, status);
    ended.store(true, std::sync::atomic::Ordering::Relaxed);
    if let Some(t) = trigger {
        let _ = t.join();
    }
    display.borrow_mut().finish();
    if scratch && !scratch_existed {
        let _ = std::fs::remove_file(&scratch_path);
    }
    let report = result.map_err(|e| match e {
        RunError::Claim(_) => usage(e.to_string()),
        e => anyhow::anyhow!(e),
    })?;
    if let Some(l) = &live {
        l.publish(drivelab_metrics::model::run::families(&report, true));
    }
    let text = p.formats.render(&report);
    sink.finish(&p.out, &text)?;
    // A failed job: one line on stderr, in JSON mode too (stdout holds
    // only the results, which carry the same error).
    for j in report.jobs.iter().filter(|j| j.ended_by_error()) {
        if let Some(d) = &j.error_detail {
            eprintln!("drivelab: job '{}': {d}", j.jobname);
        }
    }
    let code = if report.interrupted {
        130
    } else if report.jobs.iter().any(|j| j.ended_by_error()) {
        1
    } else {
        0
    };
    keep(&p, &report, &text, code);
    if let Some(l) = &live {
        l.linger(stop);
    }
    Ok(code)
}

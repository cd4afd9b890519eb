//! `drivelab test`: DMM-style test steps on a block device or file, one
//! step from the flags or a sequence from a TOML file, logged as DMM logs
//! them. Parsing and checks happen before anything is written; the steps
//! themselves live in `drivelab_steps`.

use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use clap::Args;
use drivelab_device::input;
use drivelab_metrics::model::info::Held;
use drivelab_steps::result::{render_footer, render_header, render_step};
use drivelab_steps::spec::parse_pattern;
use drivelab_steps::{
    parse_sequence, plan_steps, run_sequence, Status, StepError, StepKind, StepPlan, StepResult,
    StepSpec, TestReport, TestTarget,
};

use crate::error::usage;
use crate::output::OutputArgs;

const SEQUENCE_HELP: &str = "\
Examples:
  drivelab test /dev/sdX --step write-verify --pattern incrementing --bs 64k
  drivelab test /dev/sdX --step verify --pattern random --seed 42 --order butterfly --qd 8
  drivelab test /dev/sdX --sequence steps.toml --log test.log
  drivelab test /dev/sdX --step write --step write-same --step verify --pattern incrementing

Sequence file (TOML): an optional top-level `seed`, then one [[step]] table
per step, run in order. Keys (all optional except kind):
  kind      write | read | verify | write-verify | write-same
  pattern   allzeros allones altzeroandone altoneandzero incrementing
            decrementing walkingones walkingzeros alt1and0thenalt0and1
            alt0and1thenalt1and0 random stamped fixed:0xHH.. file:PATH
            (default incrementing)
  bs        \"64k\" or a range \"4k-128k\" (k = 1024)      (default 64k)
  order     sequential | random | butterfly            (default sequential)
  start     first LBA                                  (default 0)
  count     blocks, or \"all\"                           (default all)
  qd        queue depth 1-1024                         (default 1)
  fua       true | false                               (default false)
  on_error  stop-test | stop-sequence | continue       (default stop-test)
  retries   retries per failed command                 (default 0)
  seed      seed of data, random order and lengths     (default the file's)
  pass      sequence number in `stamped` blocks        (default 1)

  seed = 42
  [[step]]
  kind = \"write\"
  pattern = \"random\"
  bs = \"64k\"
  [[step]]
  kind = \"verify\"
  pattern = \"random\"
  order = \"butterfly\"
  qd = 8

write-verify writes the whole range, then reads the whole range back and
compares it (as DMM). write-same sends one block of the pattern and has the
drive write it over the range: SCSI WRITE SAME(10)/(16), cut to the
drive's MAXIMUM WRITE SAME LENGTH, or for SATA SCT Write Same of one whole
sector; bs, order and qd do not apply to it; patterns must be alike in every
block (not random/stamped); a drive without either command is refused.
A command that fails is re-issued in halves down to single blocks and the
exact bad LBAs are listed. LBAs are in the device's logical blocks; for a regular
file, 512 bytes unless --block-size says otherwise. Exit status: 0 all steps
PASSED, 1 any FAILED, 2 bad input or refused (nothing written), 130
interrupted.";

/// `drivelab test DEV (--step KIND [options] | --sequence FILE.toml)`
#[derive(Args, Debug)]
#[command(after_long_help = SEQUENCE_HELP)]
pub struct TestArgs {
    /// Block device or regular file to test.
    #[arg(value_name = "DEV")]
    pub dev: PathBuf,
    /// The one step's parameters (boxed: they are many).
    #[command(flatten)]
    pub one: Box<StepFlags>,
    /// Run the steps of a TOML sequence file (format in --help).
    #[arg(long, value_name = "FILE.toml")]
    pub sequence: Option<PathBuf>,
    /// Seed of random/stamped data, random order and lengths [default: chosen and printed].
    #[arg(long, value_name = "N")]
    pub seed: Option<u64>,
    /// Logical block size of a regular file, bytes [default: 512].
    #[arg(long = "block-size", value_name = "BYTES")]
    pub block_size: Option<u32>,
    /// Write to a device that is partitioned or holds a signature (never
    /// to one whose bytes are in use, nor the running system).
    #[arg(long)]
    pub force: bool,
    /// Also write the text log to FILE (as each step finishes).
    #[arg(long, value_name = "FILE")]
    pub log: Option<PathBuf>,
    /// Serve live figures for Prometheus at http://ADDR/metrics while the
    /// steps run (ADDR: PORT on loopback, or HOST:PORT); see
    /// docs/metrics.md.
    #[arg(long = "metrics-listen", value_name = "ADDR")]
    pub metrics_listen: Option<String>,
    /// With --metrics-listen: keep serving the final figures for TIME
    /// (s when bare) after the steps end, so the last scrape sees them.
    #[arg(long = "metrics-linger", value_name = "TIME")]
    pub metrics_linger: Option<String>,
    #[command(flatten)]
    pub out: OutputArgs,
}

/// The flags of a single step (`--step` and its parameters); none may be
/// combined with `--sequence`.
#[derive(Args, Debug)]
pub struct StepFlags {
    /// A step: write, read, verify, write-verify or write-same; repeat it
    /// for a sequence of steps sharing the other flags
    /// (`--step write --step write-same`).
    #[arg(long, value_name = "KIND", conflicts_with = "sequence")]
    pub step: Vec<String>,
    /// Data pattern (DMM names, random, stamped, fixed:0xHH…, file:PATH) [default: incrementing].
    #[arg(long, value_name = "NAME", conflicts_with = "sequence")]
    pub pattern: Option<String>,
    /// Transfer length, fixed (64k) or a range (4k-128k); k = 1024 [default: 64k].
    #[arg(long, value_name = "SIZE", conflicts_with = "sequence")]
    pub bs: Option<String>,
    /// First LBA, in logical blocks [default: 0].
    #[arg(long, value_name = "LBA", conflicts_with = "sequence")]
    pub start: Option<u64>,
    /// Blocks to cover, or `all` (to the end) [default: all].
    #[arg(long, value_name = "N|all", conflicts_with = "sequence")]
    pub count: Option<String>,
    /// Access order: sequential, random or butterfly [default: sequential].
    #[arg(long, value_name = "ORDER", conflicts_with = "sequence")]
    pub order: Option<String>,
    /// Queue depth, 1-1024 [default: 1].
    #[arg(long, value_name = "N", conflicts_with = "sequence")]
    pub qd: Option<u32>,
    /// Write with FUA (RWF_DSYNC on direct I/O).
    #[arg(long, conflicts_with = "sequence")]
    pub fua: bool,
    /// On an error: stop-test, stop-sequence or continue [default: stop-test].
    #[arg(long = "on-error", value_name = "POLICY", conflicts_with = "sequence")]
    pub on_error: Option<String>,
    /// Retries per failed command [default: 0].
    #[arg(long, value_name = "N", conflicts_with = "sequence")]
    pub retries: Option<u32>,
    /// Pass number written into `stamped` blocks [default: 1].
    #[arg(long, value_name = "N", conflicts_with = "sequence")]
    pub pass: Option<u64>,
}

fn step_error(e: StepError) -> anyhow::Error {
    if e.is_input() {
        usage(e.to_string())
    } else {
        anyhow::Error::new(e)
    }
}

/// The one step the flags describe.
fn step_from_flags(a: &StepFlags, kind: &str) -> Result<StepSpec, StepError> {
    let mut s = StepSpec::new(kind.parse::<StepKind>()?);
    if let Some(p) = &a.pattern {
        s.pattern = parse_pattern(p)?;
    }
    if let Some(b) = &a.bs {
        s.transfer = b.parse()?;
    }
    if let Some(v) = a.start {
        s.start = v;
    }
    if let Some(c) = &a.count {
        s.count = c.parse()?;
    }
    if let Some(o) = &a.order {
        s.order = o.parse()?;
    }
    if let Some(q) = a.qd {
        s.qd = q;
    }
    s.fua = a.fua;
    if let Some(o) = &a.on_error {
        s.on_error = o.parse()?;
    }
    if let Some(r) = a.retries {
        s.retries = r;
    }
    if let Some(p) = a.pass {
        s.pass = p;
    }
    s.validate()?;
    Ok(s)
}

/// A seed nobody chose: from the clock and the pid, mixed.
fn fresh_seed() -> u64 {
    let t = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0);
    let mut z = t ^ (u64::from(std::process::id()) << 32);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    (z ^ (z >> 31)) >> 1 // fits in TOML's i64
}

/// Where the text goes as the run proceeds: stdout (streamed), a buffer for
/// `--output`, and the `--log` file. A log that fails is closed and its
/// error kept for the end: the steps and their results go on.
struct Sinks {
    stream_stdout: bool,
    buffered: String,
    log: Option<drivelab_device::output::OutputFile>,
    log_path: Option<PathBuf>,
    log_error: Option<String>,
    /// Everything put, for the store.
    printed: String,
}

impl Sinks {
    fn put(&mut self, text: &str) -> anyhow::Result<()> {
        if self.stream_stdout {
            let mut o = std::io::stdout().lock();
            o.write_all(text.as_bytes())?;
            o.flush()?;
        } else {
            self.buffered.push_str(text);
        }
        self.printed.push_str(text);
        self.log(text);
        Ok(())
    }

    /// Append to the log file only.
    fn log(&mut self, text: &str) {
        let Some(f) = self.log.as_mut() else { return };
        if let Err(e) = f.write_all(text.as_bytes()).and_then(|_| f.flush()) {
            let shown = self
                .log_path
                .as_ref()
                .map(|p| p.display().to_string())
                .unwrap_or_default();
            self.log_error = Some(format!("cannot write the log {shown}: {e}"));
            self.log = None;
        }
    }
}

/// The steps the user gave (flags or a sequence file) and the sequence
/// file's seed.
fn specs_of(a: &TestArgs) -> anyhow::Result<(Vec<StepSpec>, Option<u64>)> {
    Ok(match (a.one.step.is_empty(), &a.sequence) {
        (false, None) => (
            a.one
                .step
                .iter()
                .map(|kind| step_from_flags(&a.one, kind))
                .collect::<Result<Vec<_>, _>>()
                .map_err(step_error)?,
            None,
        ),
        (true, Some(path)) => {
            let text = input::read_string(path, input::Kind::Sequence)
                .map_err(|e| usage(e.to_string()))?;
            let seq = parse_sequence(&path.display().to_string(), &text).map_err(step_error)?;
            (seq.steps, seq.seed)
        }
        _ => {
            return Err(usage(
                "give steps with --step KIND (write, read, verify, write-verify, write-same; repeatable) or a sequence with --sequence FILE.toml",
            ))
        }
    })
}

/// The progress line's thread: every half second, the current step's
/// share of its blocks (a write-verify's both passes). `None` when the system refuses a thread (progress is
/// optional).
fn ticker(
    plans: &[StepPlan],
    progress: &Arc<AtomicU64>,
    current: &Arc<AtomicUsize>,
    finished: &Arc<AtomicBool>,
) -> Option<std::thread::JoinHandle<()>> {
    let (progress, current, finished) = (progress.clone(), current.clone(), finished.clone());
    let totals: Vec<u64> = plans.iter().map(StepPlan::planned_blocks).collect();
    // Progress is optional: a thread the system refuses means no
    // progress line, not a panic.
    std::thread::Builder::new()
        .spawn(move || {
            while !finished.load(Ordering::Relaxed) {
                std::thread::sleep(Duration::from_millis(500));
                let i = current.load(Ordering::Relaxed);
                if let Some(total) = totals.get(i) {
                    let done = progress.load(Ordering::Relaxed);
                    let pct = done as f64 * 100.0 / (*total).max(1) as f64;
                    eprint!(
                        "\rTEST {} of {}: {pct:5.1}% of the step ({done} of {total} blocks)   ",
                        i + 1,
                        totals.len()
                    );
                }
            }
            eprint!("\r{:78}\r", "");
        })
        .ok()
}

/// Run the subcommand.
pub fn run(a: TestArgs) -> anyhow::Result<u8> {
    let (specs, file_seed) = specs_of(&a)?;
    // Where the results and the log go, checked before anything is opened.
    let mut inputs: Vec<&std::path::Path> = vec![a.dev.as_path()];
    inputs.extend(a.sequence.as_deref());
    a.out.check_inputs(&inputs)?;
    if let Some(p) = &a.log {
        crate::output::check_file_inputs(p, "--log", &inputs)?;
    }
    // The endpoint is bound before the target is opened: an address that
    // cannot be bound is bad input, nothing written.
    let live = crate::metrics::Live::from_args(
        a.metrics_listen.as_deref(),
        a.metrics_linger.as_deref(),
        "test",
        !a.out.json(),
    )?;
    let seed_given = a.seed.is_some() || file_seed.is_some();
    let seed = a.seed.or(file_seed).unwrap_or_else(fresh_seed);
    // High args: the target, the safety check, the plan.
    let writes = specs.iter().any(|s| s.kind.writes());
    let target = TestTarget::inspect(&a.dev, a.block_size, writes, a.force).map_err(step_error)?;
    let plans = plan_steps(&target, &specs, seed, seed_given).map_err(step_error)?;
    let log = match &a.log {
        Some(p) => Some(
            drivelab_device::output::Output::new(p)
                .option("--log")
                .inputs(inputs.iter().copied())
                .create()
                .map_err(|e| usage(e.to_string()))?,
        ),
        None => None,
    };
    let json = a.out.json();
    let mut sinks = Sinks {
        stream_stdout: !json && a.out.file().is_none(),
        buffered: String::new(),
        log,
        log_path: a.log.clone(),
        log_error: None,
        printed: String::new(),
    };
    let mut report = TestReport {
        target: a.dev.display().to_string(),
        block_size: target.block_size.0,
        capacity_blocks: target.blocks.0,
        direct: target.direct,
        steps: Vec::new(),
        passed: false,
        claim: target.claim.as_ref().map(|c| c.assessment().clone()),
    };
    let mut header = render_header(&report);
    header.push_str(&format!(
        "Seed: {seed} (pass --seed {seed} to repeat random data, order and lengths)\n\n"
    ));
    if json {
        // The log file still gets the text.
        sinks.log(&header);
    } else {
        sinks.put(&header)?;
    }

    report.steps = execute(&target, &plans, json, &mut sinks, live.as_ref())?;
    report.passed = report.steps.iter().all(|s| s.status == Status::Passed);
    let interrupted = report.steps.iter().any(|s| s.status == Status::Interrupted);
    let code: u8 = if interrupted {
        130
    } else if report.passed {
        0
    } else {
        1
    };
    let footer = render_footer(&report);
    let mut v = serde_json::to_value(&report)?;
    if let Some(o) = v.as_object_mut() {
        o.insert("seed".into(), serde_json::json!(seed));
        o.insert("exit_status".into(), serde_json::json!(code));
    }
    let json_text = format!("{}\n", serde_json::to_string_pretty(&v)?);
    if json {
        sinks.log(&footer);
        a.out.emit(&json_text)?;
    } else {
        sinks.put(&footer)?;
        if a.out.file().is_some() {
            a.out.emit(&sinks.buffered)?;
        }
    }
    crate::cmd_store::save(crate::cmd_store::Outcome {
        kind: drivelab_store::Kind::Test,
        json: &json_text,
        text: (!json).then_some(sinks.printed.as_str()),
        exit_status: code,
        options: serde_json::json!({
            "target": a.dev.display().to_string(),
            "steps": plans.iter().map(|p| format!("{:?}", p.spec)).collect::<Vec<_>>(),
            "seed": seed_given.then_some(seed),
        }),
        artifacts: Vec::new(),
    });
    // The results are out; the log replaces the old one, and a log that
    // failed on the way (none is left) still fails the run.
    if let Some(f) = sinks.log.take() {
        if let Err(e) = f.commit() {
            sinks.log_error = Some(e.to_string());
        }
    }
    if let Some(l) = &live {
        l.linger(crate::signal::stop_flag());
    }
    if let Some(e) = sinks.log_error {
        return Err(anyhow::Error::new(crate::error::LateWriteError(format!(
            "{e}; the results were written, the log was not"
        ))));
    }
    Ok(code)
}

/// Run the steps, with the progress line (on a terminal) and the live
/// figures (with `--metrics-listen`) beside them; each step's text goes to
/// the sinks as it finishes.
fn execute(
    target: &TestTarget,
    plans: &[StepPlan],
    json: bool,
    sinks: &mut Sinks,
    live: Option<&crate::metrics::Live>,
) -> anyhow::Result<Vec<StepResult>> {
    let stop = crate::signal::stop_flag();
    let progress = Arc::new(AtomicU64::new(0));
    let current = Arc::new(AtomicUsize::new(0));
    let finished = Arc::new(AtomicBool::new(false));
    let show_progress = std::io::stderr().is_terminal() && !json;
    let ticker = show_progress
        .then(|| ticker(plans, &progress, &current, &finished))
        .flatten();
    let held = target.claim.as_ref().map(|c| {
        let r = c.assessment();
        Held {
            path: r.path.display().to_string(),
            device: r.device.clone().unwrap_or_default(),
            serial: r.serial.clone().unwrap_or_default(),
        }
    });
    let done: Mutex<Vec<StepResult>> = Mutex::new(Vec::new());
    let mut sink_err: Option<anyhow::Error> = None;
    let result = std::thread::scope(|s| {
        if let Some(l) = live {
            s.spawn(|| {
                crate::metrics::watch_test(l, plans, &done, &progress, held.as_ref(), &finished)
            });
        }
        let result = run_sequence(target, plans, stop, &progress, |r| {
            current.store(r.index, Ordering::Relaxed);
            done.lock()
                .unwrap_or_else(|p| p.into_inner())
                .push(r.clone());
            let text = render_step(r);
            let put = if json {
                sinks.log(&text);
                Ok(())
            } else {
                if show_progress {
                    eprint!("\r{:78}\r", "");
                }
                sinks.put(&text)
            };
            if let Err(e) = put {
                sink_err.get_or_insert(e);
            }
        });
        finished.store(true, Ordering::Release);
        result
    });
    if let Some(t) = ticker {
        let _ = t.join();
    }
    let steps = result.map_err(step_error)?;
    if let Some(l) = live {
        l.settle_test(plans, &steps, held.as_ref());
    }
    match sink_err {
        Some(e) => Err(e),
        None => Ok(steps),
    }
}

//! One `drivelab season` from request to report: the drives are planned,
//! refused and confirmed by the erase crate's plan (the same consent as
//! erase), each is claimed, its journal begun (or resumed), and every drive
//! then runs its stages on its own thread: purge, fresh comparison, fill
//! passes, image restore, rounds to steady state, used comparison.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use drivelab_device::claim::Claim;
use drivelab_erase::plan::{self, Drive};
use drivelab_erase::{Consent, Method, Plan, Strategy, VerifyMode};
use drivelab_patterns::Pattern;
use drivelab_workload::JobSpec;

use crate::journal::{Entry, Header, Journal, State as JState};
use crate::result::{
    CliffAt, Compare, DriveSeason, Fill, Pass, Round, SeasonReport, State, WriteSeries,
};
use crate::seqwrite::{self, SeqJob, Source};
use crate::steady::{self, PTS};
use crate::{cliff, image, plots, purge, round, SeasonError};

/// The fill's transfer length (PTS: 128 KiB).
pub const FILL_XFER: u32 = 128 << 10;
/// The fill's queue depth.
pub const FILL_DEPTH: u32 = 32;

/// Which stages run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stages {
    /// Purge.
    pub purge: bool,
    /// Sequential fill.
    pub fill: bool,
    /// Image restore.
    pub image: bool,
    /// Overwrite rounds.
    pub rounds: bool,
}

impl Stages {
    /// Parse `purge,fill,image,rounds` (any subset, any order; `all`).
    pub fn parse(s: &str) -> Result<Stages, SeasonError> {
        let mut st = Stages {
            purge: false,
            fill: false,
            image: false,
            rounds: false,
        };
        for w in s.split(',').map(str::trim).filter(|w| !w.is_empty()) {
            match w {
                "purge" => st.purge = true,
                "fill" => st.fill = true,
                "image" => st.image = true,
                "rounds" => st.rounds = true,
                "all" => {
                    st = Stages {
                        purge: true,
                        fill: true,
                        image: true,
                        rounds: true,
                    }
                }
                other => {
                    return Err(SeasonError::BadOption(format!(
                        "--stages: unknown stage '{other}'; use any of purge,fill,image,rounds"
                    )))
                }
            }
        }
        if st.names().is_empty() {
            return Err(SeasonError::BadOption(
                "--stages names no stage; use any of purge,fill,image,rounds".into(),
            ));
        }
        Ok(st)
    }

    /// The names, in the order they run.
    pub fn names(&self) -> Vec<String> {
        [
            (self.purge, "purge"),
            (self.fill, "fill"),
            (self.image, "image"),
            (self.rounds, "rounds"),
        ]
        .iter()
        .filter(|(on, _)| *on)
        .map(|(_, n)| n.to_string())
        .collect()
    }
}

/// What the user asked for.
#[derive(Debug, Clone)]
pub struct Options {
    /// Stages.
    pub stages: Stages,
    /// The purge method (`--purge`); None = the strongest the drive offers.
    pub purge: Option<Method>,
    /// The image stage was named explicitly (so a missing image is an error).
    pub image_required: bool,
    /// Fill passes (default 2).
    pub fill_passes: u32,
    /// The rounds' workload (see [`round::parse`]).
    pub workload: String,
    /// Round length, seconds.
    pub round_seconds: f64,
    /// Round limit (PTS: 25).
    pub max_rounds: usize,
    /// Image file.
    pub image: Option<PathBuf>,
    /// Trace whose writes are replayed.
    pub image_trace: Option<PathBuf>,
    /// Fresh vs used workload.
    pub compare: Option<String>,
    /// Length of each compare run, seconds.
    pub compare_seconds: f64,
    /// Journals and purge certificates go here.
    pub state_dir: PathBuf,
    /// SVG plots go here.
    pub plots: Option<PathBuf>,
    /// Continue from the journal.
    pub resume: bool,
    /// For certificates.
    pub command_line: String,
    /// Tool version.
    pub version: String,
}

/// One `drivelab season`.
#[derive(Debug, Clone)]
pub struct Request {
    /// Whole drives.
    pub devices: Vec<PathBuf>,
    /// Options.
    pub options: Options,
    /// Consent (erase's: `--force`, `--yes`, `--confirm-serial`).
    pub consent: Consent,
}

/// A drive's stage as [`Status::figures`] reads it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct StageFigures {
    /// The stage's name (purge, fill, image, rounds, compare, ...).
    pub stage: String,
    /// Units done in the stage: bytes, or in rounds the round's I/Os.
    pub done: u64,
    /// Units the stage has to do (0 when unknown: rounds).
    pub total: u64,
    /// The round running (rounds only).
    pub round: usize,
    /// The most rounds (rounds only).
    pub max_rounds: usize,
    /// Seconds since the stage (or round) began.
    pub stage_seconds: f64,
}

/// A drive's live status, for the progress line.
#[derive(Debug)]
pub struct Status {
    /// Device node.
    pub device: String,
    /// Units done in the stage (bytes, or rounds' I/Os).
    pub done: AtomicU64,
    inner: Mutex<StageNow>,
}

#[derive(Debug, Clone)]
struct StageNow {
    stage: String,
    round: usize,
    max_rounds: usize,
    total: u64,
    started: Instant,
    round_seconds: f64,
}

impl Status {
    fn new(device: String) -> Status {
        Status {
            device,
            done: AtomicU64::new(0),
            inner: Mutex::new(StageNow {
                stage: "starting".into(),
                round: 0,
                max_rounds: 0,
                total: 0,
                started: Instant::now(),
                round_seconds: 0.0,
            }),
        }
    }

    fn enter(&self, stage: &str, total: u64, done: u64) {
        self.done.store(done, Ordering::Relaxed);
        if let Ok(mut g) = self.inner.lock() {
            g.stage = stage.to_string();
            g.total = total;
            g.started = Instant::now();
        }
    }

    fn round(&self, n: usize, max: usize, secs: f64) {
        self.done.store(0, Ordering::Relaxed);
        if let Ok(mut g) = self.inner.lock() {
            g.stage = "rounds".into();
            g.round = n;
            g.max_rounds = max;
            g.round_seconds = secs;
            g.started = Instant::now();
        }
    }

    /// The stage's figures now, for live metrics.
    pub fn figures(&self) -> StageFigures {
        let done = self.done.load(Ordering::Relaxed);
        match self.inner.lock() {
            Ok(g) => StageFigures {
                stage: g.stage.clone(),
                done,
                total: g.total,
                round: g.round,
                max_rounds: g.max_rounds,
                stage_seconds: g.started.elapsed().as_secs_f64(),
            },
            Err(_) => StageFigures {
                done,
                ..StageFigures::default()
            },
        }
    }

    /// The stage's name now.
    pub fn stage(&self) -> String {
        self.inner
            .lock()
            .map(|g| g.stage.clone())
            .unwrap_or_default()
    }

    /// One progress line: device, stage, round, progress, ETA of the stage.
    pub fn line(&self) -> String {
        let Ok(g) = self.inner.lock().map(|g| g.clone()) else {
            return self.device.clone();
        };
        let el = g.started.elapsed().as_secs_f64();
        let done = self.done.load(Ordering::Relaxed);
        let eta = |s: f64| {
            if s >= 3600.0 {
                format!("{:.0}h{:02.0}m", (s / 3600.0).floor(), (s % 3600.0) / 60.0)
            } else if s >= 60.0 {
                format!("{:.0}m{:02.0}s", (s / 60.0).floor(), s % 60.0)
            } else {
                format!("{s:.0}s")
            }
        };
        match g.stage.as_str() {
            "rounds" => {
                let left = (g.max_rounds.saturating_sub(g.round)) as f64 * g.round_seconds
                    + (g.round_seconds - el).max(0.0);
                format!(
                    "{:<14} rounds    round {}/{} {:>10.0} IOPS  ETA at most {}",
                    self.device,
                    g.round,
                    g.max_rounds,
                    done as f64 / el.max(1e-3),
                    eta(left)
                )
            }
            _ if g.total > 0 => {
                let frac = done as f64 / g.total as f64;
                let rate = done as f64 / el.max(1e-3);
                let left = if rate > 0.0 {
                    eta(g.total.saturating_sub(done) as f64 / rate)
                } else {
                    "?".into()
                };
                format!(
                    "{:<14} {:<9} {:5.1}% {:>8.1} MiB/s  ETA {left}",
                    self.device,
                    g.stage,
                    frac * 100.0,
                    rate / 1048576.0
                )
            }
            s => format!("{:<14} {s}", self.device),
        }
    }
}

/// What a season asks of its user interface.
pub trait Frontend: Sync {
    /// Ask the user to type `token` to confirm `drive`; None when nobody can be asked.
    fn ask(&self, drive: &Drive, token: &str) -> Option<std::io::Result<String>>;
    /// Writing starts now; returns the stop flag (Ctrl-C).
    fn starting(&self, drives: &[Drive]) -> &AtomicBool;
    /// Show progress until `finished` is set (own thread).
    fn watch(&self, status: &[Arc<Status>], finished: &AtomicBool);
}

/// A drive ready to season: its plan (holding the claim), workloads parsed.
struct Ready {
    plan: Plan,
    journal: Journal,
    earlier: JState,
    resumed: bool,
}

/// The most fill passes: each writes the whole drive twice over is already
/// more than any preconditioning asks for.
const MAX_FILL_PASSES: u32 = 100;
/// The most rounds: each keeps its metrics and series in the result.
const MAX_ROUNDS: usize = 10_000;

/// Check the options (bad input before anything is touched).
fn check(o: &Options) -> Result<(JobSpec, Option<JobSpec>), SeasonError> {
    let bad = |s: &str| Err(SeasonError::BadOption(s.to_string()));
    if !(1..=MAX_FILL_PASSES).contains(&o.fill_passes) {
        return Err(SeasonError::BadOption(format!(
            "--fill-passes must be 1 to {MAX_FILL_PASSES}, not {}",
            o.fill_passes
        )));
    }
    if !(o.round_seconds.is_finite() && o.round_seconds > 0.0) {
        return bad("--round-time must be more than 0 seconds");
    }
    if !(o.compare_seconds.is_finite() && o.compare_seconds > 0.0) {
        return bad("--compare-time must be more than 0 seconds");
    }
    if o.purge.is_some() && !o.stages.purge {
        return bad("--purge names a purge method, but --stages leaves out purge");
    }
    if !(1..=MAX_ROUNDS).contains(&o.max_rounds) {
        return Err(SeasonError::BadOption(format!(
            "--max-rounds must be 1 to {MAX_ROUNDS}, not {} (PTS: 25; the steady-state window needs 5)",
            o.max_rounds
        )));
    }
    if o.image.is_some() && o.image_trace.is_some() {
        return bad("give --image or --image-trace, not both");
    }
    if o.image_required && o.image.is_none() && o.image_trace.is_none() {
        return bad("--stages image needs --image FILE or --image-trace TRACE");
    }
    if let Some(p) = &o.plots {
        if !p.is_dir() {
            return Err(SeasonError::BadOption(format!(
                "--plots {}: not a directory; create it first",
                p.display()
            )));
        }
    }
    let w = round::parse("--workload", &o.workload)?;
    let c = match &o.compare {
        Some(t) => Some(round::parse("--compare", t)?),
        None => None,
    };
    Ok((w, c))
}

fn erase_options(o: &Options) -> Result<drivelab_erase::Options, SeasonError> {
    Ok(drivelab_erase::Options {
        method: Method::Auto,
        pattern: Pattern::AllZeros,
        passes: 1,
        verify: VerifyMode::None,
        skip_errors: false,
        retries: 3,
        resume: false,
        crypto: false,
        discard_first: false,
        certificate_dir: o.state_dir.clone(),
        key_dir: o.state_dir.clone(),
        transfer: None,
        queue_depth: None,
        bus_limit: None,
        strategy: Strategy::Parallel,
        command_line: o.command_line.clone(),
        version: o.version.clone(),
        parties: drivelab_erase::Parties::default(),
        stall: drivelab_erase::StallLimit::Derived,
    })
}

fn header(d: &Drive, o: &Options) -> Header {
    Header {
        device: d.dev.path.display().to_string(),
        serial: d.serial().map(String::from),
        size: d.size,
        stages: o.stages.names(),
        fill_passes: o.fill_passes,
        workload: o.workload.clone(),
        round_seconds: o.round_seconds,
        max_rounds: o.max_rounds,
        image: o
            .image
            .as_ref()
            .or(o.image_trace.as_ref())
            .map(|p| p.display().to_string()),
        compare: o.compare.clone(),
    }
}

/// Season every drive of `req`. Refusals ([`SeasonError::is_refusal`])
/// come before anything is written; a drive's own failure is in its
/// result.
pub fn season(req: &Request, fe: &dyn Frontend) -> Result<SeasonReport, SeasonError> {
    let o = &req.options;
    let (workload, compare) = check(o)?;
    let ereq = drivelab_erase::Request {
        devices: req.devices.clone(),
        options: erase_options(o)?,
        consent: req.consent.clone(),
        dry_run: false,
    };
    // Refusals (every drive, one line) and consent, as erase does.
    let all = plan::prepare(&ereq)?;
    if o.stages.purge {
        for d in &all.drives {
            purge::choose_requested(&d.offers, o.purge)
                .map_err(|e| SeasonError::Refused(format!("{}: {e}", d.dev.path.display())))?;
        }
    }
    for d in &all.drives {
        image::check(o.image.as_deref(), o.image_trace.as_deref(), d.size)?;
        // --resume continues a journal: without one, nothing to continue.
        let j = crate::journal::path_for(&o.state_dir, &header(d, o));
        if o.resume && !j.is_file() {
            return Err(SeasonError::Refused(format!(
                "--resume: no season journal of {} in {} (looked for {}); run without --resume to start a new season, or give the --state-dir the journal is in",
                d.dev.path.display(),
                o.state_dir.display(),
                j.display()
            )));
        }
    }
    plan::confirm(&all.drives, &req.consent, |d, t| fe.ask(d, t))?;
    drop(all);
    // One plan per drive, each holding its drive's claim.
    let mut ready = Vec::new();
    for dev in &req.devices {
        let one = drivelab_erase::Request {
            devices: vec![dev.clone()],
            ..ereq.clone()
        };
        let mut p = plan::prepare(&one)?;
        p.claim_all(req.consent.force)?;
        let d = &p.drives[0];
        let (journal, earlier) = Journal::begin(&o.state_dir, &header(d, o), o.resume)?;
        let resumed = !earlier.entries.is_empty();
        ready.push(Ready {
            plan: p,
            journal,
            earlier,
            resumed,
        });
    }
    let drives: Vec<Drive> = ready.iter().map(|r| r.plan.drives[0].clone()).collect();
    let stop = fe.starting(&drives);
    let status: Vec<Arc<Status>> = drives
        .iter()
        .map(|d| Arc::new(Status::new(d.dev.path.display().to_string())))
        .collect();
    let finished = AtomicBool::new(false);
    let t0 = Instant::now();
    let specs = (&workload, compare.as_ref());
    let results: Vec<DriveSeason> = std::thread::scope(|s| {
        let show = s.spawn(|| fe.watch(&status, &finished));
        let hs: Vec<_> = ready
            .into_iter()
            .zip(&status)
            .map(|(r, st)| s.spawn(move || season_one(r, o, specs, stop, st)))
            .collect();
        let out: Vec<DriveSeason> = hs
            .into_iter()
            .zip(&drives)
            .map(|(h, d)| {
                h.join().unwrap_or_else(|_| {
                    let mut x = blank(d, false);
                    x.error = Some("internal error: the drive's worker panicked".into());
                    x
                })
            })
            .collect();
        finished.store(true, Ordering::Relaxed);
        let _ = show.join();
        out
    });
    Ok(SeasonReport {
        version: o.version.clone(),
        stages: o.stages.names(),
        drives: results,
        complete_seconds: t0.elapsed().as_secs_f64(),
    })
}

fn blank(d: &Drive, resumed: bool) -> DriveSeason {
    DriveSeason {
        identity: purge::identity(d),
        state: State::Failed,
        error: None,
        fresh: false,
        resumed,
        purge: None,
        fill: None,
        write_series: None,
        image: None,
        workload: None,
        rounds: Vec::new(),
        steady_state: None,
        compare: None,
        journal: None,
        plots: Vec::new(),
        claim: None,
        health: None,
    }
}

/// How a stage ended when it did not finish.
enum Halt {
    Stopped,
    Failed(SeasonError),
}

impl From<SeasonError> for Halt {
    fn from(e: SeasonError) -> Halt {
        Halt::Failed(e)
    }
}

fn season_one(
    r: Ready,
    o: &Options,
    specs: (&JobSpec, Option<&JobSpec>),
    stop: &AtomicBool,
    st: &Status,
) -> DriveSeason {
    let Ready {
        mut plan,
        mut journal,
        earlier,
        resumed,
    } = r;
    let d = plan.drives[0].clone();
    let mut out = blank(&d, resumed);
    out.claim = plan
        .drives_claimed()
        .next()
        .map(|(_, c)| c.assessment().clone());
    // Health before and after the whole season (reads only).
    let now = || {
        let (s, n) = drivelab_erase::clock::unix_now();
        drivelab_erase::clock::rfc3339(s, n)
    };
    let before = drivelab_device::health::around::has_health(d.dev.kind)
        .then(|| drivelab_device::health::around::Before::take(&d.dev.path, now()));
    let r = stages(
        &mut plan,
        &d,
        o,
        specs,
        stop,
        st,
        &mut journal,
        &earlier,
        &mut out,
    );
    out.health = before.map(|b| b.after(&d.dev.path, now(), None));
    match r {
        Ok(()) => {
            out.state = State::Done;
            journal.remove();
            st.enter("done", 0, 0);
        }
        Err(h) => {
            let why = match h {
                Halt::Stopped => {
                    out.state = State::Stopped;
                    st.enter("stopped", 0, 0);
                    "stopped".to_string()
                }
                Halt::Failed(e) => {
                    out.state = State::Failed;
                    st.enter("FAILED", 0, 0);
                    e.to_string()
                }
            };
            out.error = Some(format!(
                "{why}; progress is in {}: rerun the same command with --resume to continue",
                journal.path.display()
            ));
            out.journal = Some(journal.path.clone());
        }
    }
    if let Some(dir) = &o.plots {
        match plots::write(dir, &out) {
            Ok(f) => out.plots = f,
            Err(e) => {
                if out.error.is_none() {
                    out.state = State::Failed;
                    out.error = Some(e.to_string());
                }
            }
        }
    }
    out
}

/// The fill stage: `--fill-passes` sequential passes over the whole drive,
/// each resumed from its journalled mark; the first pass's series becomes
/// the write series.
#[allow(clippy::too_many_arguments)]
fn fill(
    claim: &Claim,
    d: &Drive,
    o: &Options,
    stop: &AtomicBool,
    st: &Status,
    journal: &mut Journal,
    earlier: &JState,
    out: &mut DriveSeason,
) -> Result<(), Halt> {
    let done = earlier.fill_passes();
    let mut passes: Vec<Pass> = Vec::new();
    let mut first_series = None;
    let bucket = seqwrite::bucket_for(d.size, u64::from(FILL_XFER));
    for pass in 0..o.fill_passes {
        if let Some((p, s)) = done.iter().find(|(p, _)| p.pass == pass + 1) {
            passes.push(p.clone());
            if pass == 0 {
                first_series = Some((s.clone(), p.start_offset));
            }
            continue;
        }
        let start = earlier.fill_mark(pass).min(d.size);
        st.enter(
            &format!("fill {}/{}", pass + 1, o.fill_passes),
            d.size,
            start,
        );
        let job = SeqJob {
            claim,
            start,
            end: d.size,
            xfer: FILL_XFER,
            depth: FILL_DEPTH,
            bucket,
            source: Source::Random(0x5ea5_0000 + u64::from(pass)),
            stop,
            done: &st.done,
        };
        let mut last = start;
        let r = seqwrite::write(&job, &mut |w| {
            if w > last {
                last = w;
                journal.add(&Entry::FillMark { pass, offset: w })?;
            }
            Ok(())
        })?;
        if r.interrupted {
            return Err(Halt::Stopped);
        }
        let p = Pass {
            pass: pass + 1,
            start_offset: start,
            bytes: r.bytes,
            seconds: r.seconds,
            bw_bytes: if r.seconds > 0.0 {
                r.bytes as f64 / r.seconds
            } else {
                0.0
            },
        };
        journal.add(&Entry::FillPass {
            pass: p.clone(),
            series: r.series.clone(),
        })?;
        if pass == 0 {
            first_series = Some((r.series, start));
        }
        passes.push(p);
    }
    out.fill = Some(Fill {
        passes: o.fill_passes,
        transfer_bytes: FILL_XFER,
        queue_depth: FILL_DEPTH,
        pass_results: passes,
    });
    if let Some((points, start)) = first_series {
        out.write_series = Some(series(points, start, bucket, d.size));
    }
    Ok(())
}

#[allow(clippy::too_many_arguments)]
fn stages(
    plan: &mut Plan,
    d: &Drive,
    o: &Options,
    (workload, compare): (&JobSpec, Option<&JobSpec>),
    stop: &AtomicBool,
    st: &Status,
    journal: &mut Journal,
    earlier: &JState,
    out: &mut DriveSeason,
) -> Result<(), Halt> {
    // Purge.
    if o.stages.purge {
        let p = match earlier.purge() {
            Some(p) => p.clone(),
            None => {
                st.enter("purge", 0, 0);
                let c =
                    purge::choose_requested(&d.offers, o.purge).map_err(SeasonError::Refused)?;
                let p = purge::purge(plan, &c, &o.state_dir, stop, &o.command_line, &o.version)?
                    .ok_or(Halt::Stopped)?;
                journal.add(&Entry::Purge(p.clone()))?;
                p
            }
        };
        out.fresh = p.method.is_some();
        out.purge = Some(p);
    }
    let claim = plan
        .drives_claimed()
        .next()
        .map(|(_, c)| c)
        .ok_or_else(|| SeasonError::BadOption("no drive claimed".into()))?;
    // Fresh comparison.
    if let (Some(spec), Some(text)) = (compare, &o.compare) {
        let fresh = match earlier.compare_fresh() {
            Some(m) => m,
            None => {
                st.enter("compare (fresh)", 0, 0);
                let (m, _) = round::run(claim, spec, o.compare_seconds, stop, &st.done)?
                    .ok_or(Halt::Stopped)?;
                journal.add(&Entry::CompareFresh(m))?;
                m
            }
        };
        out.compare = Some(Compare {
            workload: text.clone(),
            fresh: Some(fresh),
            used: None,
            change: Vec::new(),
        });
    }
    if o.stages.fill {
        fill(claim, d, o, stop, st, journal, earlier, out)?;
    }
    // Image restore.
    if o.stages.image && (o.image.is_some() || o.image_trace.is_some()) {
        let img = match earlier.image() {
            Some(i) => i.clone(),
            None => {
                let i = if let Some(p) = &o.image {
                    st.enter(
                        "image",
                        std::fs::metadata(p).map(|m| m.len()).unwrap_or(0),
                        0,
                    );
                    image::restore_image(claim, p, stop, &st.done)?
                } else if let Some(t) = &o.image_trace {
                    st.enter("trace", 0, 0);
                    image::replay_trace(claim, t, stop)?
                } else {
                    None
                };
                let i = i.ok_or(Halt::Stopped)?;
                journal.add(&Entry::Image(i.clone()))?;
                i
            }
        };
        out.image = Some(img);
    }
    // Rounds to steady state.
    if o.stages.rounds {
        out.workload = Some(o.workload.clone());
        let mut rounds: Vec<Round> = earlier.rounds();
        let values = |r: &[Round]| r.iter().map(|x| x.metrics.iops).collect::<Vec<_>>();
        if !earlier.rounds_done() {
            while rounds.len() < o.max_rounds && !steady::assess(&values(&rounds), &PTS).steady {
                let n = rounds.len() + 1;
                st.round(n, o.max_rounds, o.round_seconds);
                let spec = round::for_round(workload, n);
                let (m, written) = round::run(claim, &spec, o.round_seconds, stop, &st.done)?
                    .ok_or(Halt::Stopped)?;
                let r = Round {
                    round: n,
                    metrics: m,
                    bytes_written: written,
                };
                journal.add(&Entry::Round(r))?;
                rounds.push(r);
                out.rounds = rounds.clone();
            }
            journal.add(&Entry::RoundsDone)?;
        }
        out.steady_state = Some(steady::assess(&values(&rounds), &PTS));
        out.rounds = rounds;
    }
    // Used comparison.
    if let (Some(spec), Some(c)) = (compare, out.compare.as_mut()) {
        let used = match earlier.compare_used() {
            Some(m) => m,
            None => {
                st.enter("compare (used)", 0, 0);
                let (m, _) = round::run(claim, spec, o.compare_seconds, stop, &st.done)?
                    .ok_or(Halt::Stopped)?;
                journal.add(&Entry::CompareUsed(m))?;
                m
            }
        };
        c.used = Some(used);
        c.settle();
    }
    Ok(())
}

/// The whole-drive series of a pass that started at `start`, with its cliff.
fn series(
    points: Vec<crate::result::WritePoint>,
    start: u64,
    bucket: u64,
    size: u64,
) -> WriteSeries {
    let tput: Vec<f64> = points.iter().map(|p| p.bw_bytes).collect();
    let cliff = cliff::detect(&tput).map(|c| {
        let at = if c.index == 0 {
            start
        } else {
            points[c.index - 1].written_bytes
        };
        CliffAt {
            at_bytes: at,
            at_pct: at as f64 / size.max(1) as f64 * 100.0,
            detector: c,
        }
    });
    WriteSeries {
        bucket_bytes: bucket,
        points,
        cliff,
        partial: start > 0,
    }
}

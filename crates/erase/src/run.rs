//! One `drivelab erase` from request to report, and the strategies that run
//! many drives: the stages of the crate in order.
//!
//! [`erase`] plans (refusals, holds, methods), answers a dry run, checks
//! consent, then runs every drive under its strategy: parallel (a thread
//! per drive), sequential, or round-robin (a thread per drive taking one
//! command per turn). Each drive goes journal -> issue -> verify ->
//! certificate ([`erase_one`]); a drive that fails reports it in its
//! outcome and never stops the others. The caller talks to the user
//! through a [`Frontend`]: confirmation, the start, live progress.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Instant;

use crate::cert::{self, build::Evidence};
use crate::clock;
use crate::drive_run::DriveRun;
use crate::issue::{self, Flow};
use crate::journal::{DriveIdentity, DriveJournal, JournalHeader};
use crate::outcome::{EraseResult, Outcome, Report, Summary};
use crate::plan::{self, estimate, Drive, Options, Plan, Request};
use crate::sched::{Phase, Progress, Shared};
use crate::verify::{self, READS_COMMAND};
use crate::EraseError;
use drivelab_device::claim::Claim;
use drivelab_device::health::around::{self, Before};

/// What an erase asks of its user interface.
pub trait Frontend: Sync {
    /// Ask the user to type `token` (the drive's serial, or its path) to
    /// confirm erasing `drive`; None when nobody can be asked (no terminal).
    fn ask(&self, drive: &Drive, token: &str) -> Option<std::io::Result<String>>;

    /// The drives are confirmed and writing starts now; returns the flag
    /// that stops the erase (Ctrl-C).
    fn starting(&self, drives: &[Drive]) -> &AtomicBool;

    /// Show progress until `finished` is set (runs on its own thread while
    /// the drives are erased).
    fn watch(&self, drives: &[Drive], progress: &[Arc<Progress>], finished: &AtomicBool);
}

/// Do what `req` asks: a dry run's plan, or erase every drive. Refusals
/// ([`EraseError::is_refusal`]) come before anything is written; any other
/// error (the signing key, the certificate dir) before any drive is
/// touched; a drive's own failure is in its outcome.
pub fn erase(req: &Request, fe: &dyn Frontend) -> Result<Report, EraseError> {
    let mut plan = plan::prepare(req)?;
    plan::check_hidden(&mut plan.drives, &req.consent)?;
    if req.dry_run {
        return Ok(Report::DryRun(estimate::dry_run(
            &plan.drives,
            &req.options,
        )));
    }
    plan::confirm(&plan.drives, &req.consent, |d, token| fe.ask(d, token))?;
    plan.claim_all(req.consent.force)?;
    plan.restore_hidden()?;
    let stop = fe.starting(&plan.drives);
    let progress: Vec<Arc<Progress>> = plan
        .drives
        .iter()
        .map(|_| Arc::new(Progress::default()))
        .collect();
    let finished = AtomicBool::new(false);
    let t0 = Instant::now();
    let outcomes = std::thread::scope(|s| {
        let show = s.spawn(|| fe.watch(&plan.drives, &progress, &finished));
        let timeline = s.spawn(|| crate::sched::record_timeline(&progress, &finished));
        let r = run_all(&plan, &req.options, stop, &progress);
        finished.store(true, Ordering::Relaxed);
        let _ = show.join();
        r.map(|o| (o, timeline.join().unwrap_or_default()))
    })
    .map(|(mut o, lines)| {
        for (out, line) in o.iter_mut().zip(lines) {
            out.timeline = line;
        }
        o
    })?;
    let complete = t0.elapsed().as_secs_f64();
    // The drives stay held until every one is certified.
    drop(plan);
    Ok(Report::Erased(summary(&req.options, outcomes, complete)))
}

fn summary(opts: &Options, drives: Vec<Outcome>, complete: f64) -> Summary {
    let total_bytes: u64 = drives.iter().map(|o| o.bytes).sum();
    Summary {
        strategy: opts.strategy,
        pattern: opts.pattern.to_string(),
        verify: opts.verify,
        bus_limit_bytes_per_s: opts.bus_limit,
        drives,
        complete_seconds: complete,
        total_bytes,
        aggregate_mb_per_s: if complete > 0.0 {
            total_bytes as f64 / complete / 1e6
        } else {
            0.0
        },
    }
}

/// Erase every drive of `plan` with the strategy in `opts`. Key problems
/// fail before anything is written; a drive's own failure is in its
/// outcome.
pub fn run_all(
    plan: &Plan,
    opts: &Options,
    stop: &AtomicBool,
    progress: &[Arc<Progress>],
) -> Result<Vec<Outcome>, EraseError> {
    let drives: Vec<(&Drive, &Claim)> = plan.drives_claimed().collect();
    let key = cert::load_or_create_key(&opts.key_dir)?;
    std::fs::create_dir_all(&opts.certificate_dir).map_err(|e| {
        EraseError::Certificate(format!(
            "cannot create {}: {e}",
            opts.certificate_dir.display()
        ))
    })?;
    let shared = Shared::new(opts.strategy, drives.len(), opts.bus_limit, stop);
    let one = |index: usize| -> Outcome {
        let (drive, claim) = drives[index];
        let run = DriveRun {
            index,
            drive,
            claim,
            opts,
            shared: &shared,
            key: &key,
            progress: &progress[index],
        };
        let o = erase_one(&run);
        shared.finish(index);
        o
    };
    let outcomes = match opts.strategy {
        plan::Strategy::Sequential => (0..drives.len()).map(one).collect(),
        _ => std::thread::scope(|s| {
            let hs: Vec<_> = (0..drives.len()).map(|i| s.spawn(move || one(i))).collect();
            hs.into_iter()
                .enumerate()
                .map(|(i, h)| h.join().unwrap_or_else(|_| panicked(drives[i].0)))
                .collect()
        }),
    };
    Ok(outcomes)
}

/// The outcome of a drive whose worker panicked.
fn panicked(d: &Drive) -> Outcome {
    Outcome {
        reason: String::new(),
        offloaded: None,
        error: Some("internal error: the drive's worker panicked".into()),
        ..Outcome::new(d)
    }
}

/// Erase one drive: journal, issue, verify, certify. An error is the
/// drive's failure, in its outcome.
fn erase_one(run: &DriveRun<'_>) -> Outcome {
    let mut out = Outcome::new(run.drive);
    out.claim = Some(run.claim.assessment().clone());
    let path = &run.drive.dev.path;
    let mut before = around::has_health(run.drive.dev.kind).then(|| Before::take(path, now_text()));
    let r = stages(run, clock::unix_now(), &mut out, &mut before);
    if let Some(b) = before {
        // Stopped or failed before the certificate: the reading after is
        // still kept with the result.
        out.health = Some(b.after(path, now_text(), None));
    }
    if let Err(e) = r {
        if run.progress.phase() == Phase::Erasing {
            // Failed while writing: what the journal's watermark holds
            // (every byte below it is written), this run's part of it.
            out.bytes = run
                .progress
                .done
                .load(std::sync::atomic::Ordering::Relaxed)
                .saturating_sub(out.resumed_bytes);
        }
        run.progress.set_phase(Phase::Failed);
        out.result = EraseResult::Failed;
        out.error = Some(e.to_string());
    }
    out
}

/// The header a journal of this erase of `d` carries.
fn header(d: &Drive, opts: &Options, seed: u64, t0: (u64, u32)) -> JournalHeader {
    JournalHeader {
        device: d.dev.path.display().to_string(),
        serial: d.serial().map(String::from),
        size: d.size,
        method: d.choice.method.name().into(),
        pattern: opts.pattern.to_string(),
        passes: opts.passes.max(1),
        seed,
        started: clock::rfc3339(t0.0, t0.1),
        identity: Some(DriveIdentity::of(&d.dev, d.serial(), d.size)),
    }
}

/// The stages of one drive, filling `out` as they go; returns early (Ok)
/// when stopped, with the journal kept for `--resume`.
fn stages(
    run: &DriveRun<'_>,
    t0: (u64, u32),
    out: &mut Outcome,
    before: &mut Option<Before>,
) -> Result<(), EraseError> {
    let (d, opts, progress) = (run.drive, run.opts, run.progress);
    let seed = issue::seed_for(d, opts);
    let mut jr = DriveJournal::begin(
        &opts.certificate_dir,
        header(d, opts, seed, t0),
        opts.resume,
        t0.0,
    )?;
    out.journal = Some(jr.path.clone());
    out.resumed_bytes = jr.resumed_bytes();

    let prior = sample_before(run, &mut jr, seed)?;
    let issued = issue::issue(run, &mut jr, seed)?;
    // Offloaded and passthrough methods change the medium behind the page
    // cache: drop it, so that no buffered reader sees the old data.
    run.claim.drop_cached().map_err(|source| EraseError::Io {
        device: d.dev.path.display().to_string(),
        what: "dropping the cached pages after the erase".into(),
        source,
    })?;
    let mut rec = issued.rec;
    out.bytes = rec.bytes;
    out.tuning = rec.tuning;
    if rec.offloaded.is_some() {
        out.offloaded = rec.offloaded;
    }
    if rec.tuning.is_some() {
        out.stream_io_seconds = Some(rec.io_seconds);
    }
    out.erase_seconds = issued.seconds;
    if issued.flow == Flow::Stopped {
        let note = rec
            .stop_note
            .take()
            .map(|n| format!(" {n}"))
            .unwrap_or_default();
        let why = format!(
            "stopped{note}; progress is in {}: rerun the same command with --resume to continue",
            jr.path.display()
        );
        stopped(out, progress, why);
        return Ok(());
    }

    let v = verify::verify_drive(
        d,
        run.claim,
        prior.as_ref(),
        opts,
        seed,
        &rec.skipped,
        run.shared,
        progress,
    )?;
    if let Some((reads, bytes)) = v.reads {
        rec.command(READS_COMMAND, reads, bytes);
    }
    out.verify_seconds = v.seconds;
    if v.stopped {
        let why = format!(
            "stopped during verification; the erase is complete in {}: rerun with --resume to verify and certify",
            jr.path.display()
        );
        stopped(out, progress, why);
        return Ok(());
    }
    out.verification = v.summary(opts.verify);

    // The reading after the erase, with the bytes this run wrote for the
    // drive's write counter to corroborate.
    let offloaded = !(d.choice.method == crate::Method::Stream
        || (d.choice.method == crate::Method::Zeroout && out.offloaded == Some(false)));
    out.health = before
        .take()
        .map(|b| b.after(&d.dev.path, now_text(), Some((rec.bytes, offloaded))));
    let evidence = Evidence {
        drive: d,
        opts,
        seed,
        journal: &jr,
        rec: &rec,
        verification: &v,
        started: t0,
        erase_seconds: out.erase_seconds,
        offloaded: out.offloaded,
        health: out.health.as_ref(),
    };
    let c = cert::build::certificate(&evidence, clock::unix_now());
    out.result = c.result;
    out.error = c.failure.clone();
    out.exceptions = c.exceptions.len();
    let (json, html) = cert::write(&c, d, &opts.certificate_dir, run.key)?;
    certified(out, json, html);
    // The erase is complete and certified: the journal has done its job.
    jr.remove();
    progress.set_phase(if out.result == EraseResult::Failed {
        Phase::Failed
    } else {
        Phase::Done
    });
    Ok(())
}

/// Before an erase whose data is the drive's choice, the blocks the
/// verification reads again, kept in the journal before anything is sent.
/// A resumed run takes no new sample (the erase may be done): it uses the
/// one the journal kept, or has none.
fn sample_before(
    run: &DriveRun<'_>,
    jr: &mut DriveJournal,
    seed: u64,
) -> Result<Option<verify::prior::Prior>, EraseError> {
    let (d, opts) = (run.drive, run.opts);
    if opts.verify == crate::plan::VerifyMode::None
        || !d.choice.method.leaves_indeterminate_data(opts.crypto)
    {
        return Ok(None);
    }
    if jr.earlier.is_some() {
        return Ok(jr.prior().map(|blocks| verify::prior::Prior {
            seed,
            blocks: blocks.to_vec(),
        }));
    }
    let prior = verify::prior::take(run.claim, d.lbs, d.size / u64::from(d.lbs), seed).map_err(
        |source| EraseError::Io {
            device: d.dev.path.display().to_string(),
            what: "reading the sample before the erase (O_DIRECT)".into(),
            source,
        },
    )?;
    jr.journal.prior(&prior.blocks)?;
    Ok(Some(prior))
}

fn now_text() -> String {
    let (s, n) = clock::unix_now();
    clock::rfc3339(s, n)
}

fn stopped(out: &mut Outcome, progress: &Progress, why: String) {
    progress.set_phase(Phase::Stopped);
    out.result = EraseResult::Stopped;
    out.error = Some(why);
}

fn certified(out: &mut Outcome, json: PathBuf, html: PathBuf) {
    out.certificate = Some(json);
    out.html = Some(html);
    out.journal = None;
}

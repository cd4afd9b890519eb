//! The issue stage: send one drive the commands of its method, pass after
//! pass, front to back, then flush its cache.
//!
//! Every range method is a front-to-back loop of commands over the drive,
//! so one loop ([`Ctx::chunked`], in [`ranged`]) serves zeroout, discard,
//! WRITE SAME, SCT Write Same and NVMe Write Zeroes: it takes the
//! round-robin turn and the bus budget before each command, retries a
//! failing command, narrows a range that keeps failing down to its bad
//! blocks (retry-skip) or stops (abort), and moves the journal's watermark.
//! [`stream`] is the same over io_uring with many writes in flight and a
//! tuner; [`whole`] sends the one-command format and sanitize methods and
//! polls them to the end. What was sent is kept in a [`Record`] for the
//! certificate. A drive that fails returns its error; it never stops the
//! others.

mod ranged;
pub mod stall;
mod stream;
mod whole;

use std::collections::BTreeMap;
use std::sync::atomic::Ordering;
use std::time::Instant;

use drivelab_engine::narrow::narrow;
use drivelab_patterns::{Generator, PatternError};

use crate::drive_run::DriveRun;
use crate::journal::{DriveJournal, Journal, JournalState, Skipped};
use crate::outcome::Tuning;
use crate::plan::{Drive, Method, Options};
use crate::sched::{Phase, Progress, Shared};
use crate::EraseError;
use drivelab_device::claim::Claim;

/// What one run sent a drive, for the certificate.
#[derive(Debug, Default)]
pub struct Record {
    /// Per command description: (count, bytes covered).
    pub commands: BTreeMap<String, (u64, u64)>,
    /// Errors met, including ones a retry cured.
    pub errors: Vec<String>,
    /// Commands that succeeded on a retry.
    pub retried: u64,
    /// Ranges skipped after errors (this run's and earlier runs').
    pub skipped: Vec<Skipped>,
    /// Bytes covered by this run, all passes.
    pub bytes: u64,
    /// The stream's final setting.
    pub tuning: Option<Tuning>,
    /// Whether BLKZEROOUT was offloaded, as found while running.
    pub offloaded: Option<bool>,
    /// Stream: seconds from the first write to the last completion.
    pub io_seconds: f64,
    /// What a stopped command left on the drive, for the stop's message
    /// (the security erase's password clean-up).
    pub stop_note: Option<String>,
}

impl Record {
    /// Count `count` commands named `name` covering `bytes`.
    pub fn command(&mut self, name: &str, count: u64, bytes: u64) {
        let e = self.commands.entry(name.to_string()).or_insert((0, 0));
        e.0 += count;
        e.1 += bytes;
    }
}

/// Whether the passes finished or were stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flow {
    /// Every pass is written.
    Done,
    /// Stopped (Ctrl-C); the journal has the progress.
    Stopped,
}

/// What the issue stage did to one drive.
#[derive(Debug)]
pub struct Issued {
    /// What was sent.
    pub rec: Record,
    /// Finished or stopped.
    pub flow: Flow,
    /// Seconds of the stage (passes, discard-first, flush).
    pub seconds: f64,
}

/// The seed of per-block patterns (random, stamped) for a drive: the same
/// for every run of the same erase, so a resumed run writes what the first
/// would have.
pub fn seed_for(d: &Drive, opts: &Options) -> u64 {
    let dev = d.dev.path.display().to_string();
    let key = format!("{}|{}|{}", d.serial().unwrap_or(&dev), d.size, opts.pattern);
    fnv(&key)
}

fn fnv(s: &str) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in s.bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h
}

/// The pattern generator of pass `pass` (0-based).
pub fn pass_generator(
    opts: &Options,
    lbs: u32,
    seed: u64,
    pass: u32,
) -> Result<Generator, PatternError> {
    Generator::builder(opts.pattern.clone(), lbs as usize)
        .seed(seed)
        .run_id(seed)
        .sequence(u64::from(pass) + 1)
        .build()
}

/// One drive's issue stage, with what it needs.
pub(crate) struct Ctx<'a> {
    index: usize,
    drive: &'a Drive,
    claim: &'a Claim,
    opts: &'a Options,
    shared: &'a Shared<'a>,
    progress: &'a Progress,
    journal: &'a mut Journal,
    rec: Record,
    /// Bytes of earlier passes (for progress).
    base: u64,
    /// Failed commands in a row whose every block failed again.
    wholly_failed: u32,
}

/// Commands in a row whose every block fails when written one by one that
/// end a drive under retry-skip: real medium errors come in clusters far
/// smaller than a command; a drive that is gone fails everything.
const WHOLLY_FAILED_GONE: u32 = 2;

/// Write every pass of the drive (continuing after what `jr` says earlier
/// runs did), discard first when asked, and flush the drive.
pub(crate) fn issue(
    run: &DriveRun<'_>,
    jr: &mut DriveJournal,
    seed: u64,
) -> Result<Issued, EraseError> {
    let (d, opts, progress) = (run.drive, run.opts, run.progress);
    let passes = opts.passes.max(1);
    progress.enter(
        Phase::Erasing,
        jr.resumed_bytes(),
        d.size * u64::from(passes),
    );
    let rec = Record {
        skipped: jr.skipped(),
        ..Record::default()
    };
    let mut ctx = Ctx {
        index: run.index,
        drive: d,
        claim: run.claim,
        opts,
        shared: run.shared,
        progress,
        journal: &mut jr.journal,
        rec,
        base: 0,
        wholly_failed: 0,
    };
    let started = Instant::now();
    let flow = ctx.passes(jr.earlier.as_ref(), seed)?;
    ctx.journal.sync()?;
    // Round-robin: this drive sends no more commands; verifying must not
    // hold up the others' turns.
    run.shared.finish(run.index);
    if flow == Flow::Done {
        ctx.flush();
    }
    Ok(Issued {
        rec: ctx.rec,
        flow,
        seconds: started.elapsed().as_secs_f64(),
    })
}

impl Ctx<'_> {
    /// Discard first (when asked and nothing is done yet), then every pass
    /// from where earlier runs stopped, with the method's own loop.
    fn passes(&mut self, earlier: Option<&JournalState>, seed: u64) -> Result<Flow, EraseError> {
        let d = self.drive;
        let watermark = |pass: u32| earlier.map(|s| s.watermark(pass)).unwrap_or(0);
        let mut flow = Flow::Done;
        if self.opts.discard_first && watermark(0) == 0 && d.choice.method != Method::Discard {
            // Not journalled as a pass: a resumed run skips it once pass 0 moved.
            let saved = self.rec.bytes;
            flow = self.discard_range(u32::MAX, 0)?;
            self.rec.bytes = saved;
        }
        for pass in 0..self.opts.passes.max(1) {
            if flow == Flow::Stopped {
                break;
            }
            self.base = d.size * u64::from(pass);
            let start = watermark(pass);
            if start >= d.size {
                continue;
            }
            let gen = pass_generator(self.opts, d.lbs, seed, pass)?;
            flow = match d.choice.method {
                Method::Stream | Method::Auto => self.stream(pass, start, &gen)?,
                Method::Zeroout => self.zeroout(pass, start)?,
                Method::Discard => self.discard_range(pass, start)?,
                Method::WriteSame => self.write_same(pass, start, &gen)?,
                Method::SctWriteSame => self.sct_write_same(pass, start)?,
                Method::NvmeWriteZeroes => self.nvme_write_zeroes(pass, start)?,
                Method::NvmeFormat
                | Method::NvmeSanitize
                | Method::AtaSanitize
                | Method::ScsiSanitize
                | Method::AtaSecurityErase
                | Method::AtaSecurityEraseEnhanced => self.whole_device(pass)?,
            };
        }
        Ok(flow)
    }

    /// Flush the drive's volatile cache (a failure is recorded, not fatal).
    fn flush(&mut self) {
        let fl = self.claim.sync();
        match fl {
            Ok(()) => self
                .rec
                .command("fsync (flush the drive's volatile write cache)", 1, 0),
            Err(e) => self.rec.errors.push(format!("fsync failed: {e}")),
        }
    }

    fn dev(&self) -> String {
        self.drive.dev.path.display().to_string()
    }

    fn stopped(&self) -> bool {
        self.shared.stopped()
    }

    fn io(&self, what: &str, e: std::io::Error) -> EraseError {
        EraseError::Io {
            device: self.dev(),
            what: what.to_string(),
            source: e,
        }
    }

    fn command_error(&self, what: &str, why: String) -> EraseError {
        EraseError::Command {
            device: self.dev(),
            what: what.to_string(),
            why,
        }
    }

    /// Wait for the turn and the bus; false when stopped meanwhile.
    fn before_command(&self, bus_bytes: u64) -> bool {
        self.shared.before_command(self.index, bus_bytes)
    }

    fn after_command(&self) {
        self.shared.after_command(self.index);
    }

    /// Pass `pass` is written below byte `watermark`.
    fn mark(&mut self, pass: u32, watermark: u64) -> Result<(), EraseError> {
        self.progress
            .done
            .store(self.base + watermark, Ordering::Relaxed);
        self.journal.done(pass, watermark)
    }

    /// A range failed after its retries: narrow it down to the bad blocks
    /// with `op` (one command per half), even under abort, so that the
    /// failure names the blocks that cannot be written rather than the (up
    /// to 1 MiB) command that held them; then abort, or record them and go
    /// on (retry-skip) unless the drive takes no writes at all. Under abort
    /// only commands up to the stream's longest tuned write
    /// ([`crate::tune::MAX_LEN`]) are narrowed: a wholly failing one costs
    /// about twice as many single-block commands as it has blocks; a longer
    /// one is reported as the command's range.
    fn give_up(
        &mut self,
        pass: u32,
        off: u64,
        len: u64,
        attempts: u32,
        why: String,
        mut op: impl FnMut(u64, u64) -> Result<(), String>,
    ) -> Result<(), EraseError> {
        let lbs = u64::from(self.drive.lbs);
        if !self.opts.skip_errors && len > u64::from(crate::tune::MAX_LEN) {
            return Err(EraseError::Aborted {
                device: self.dev(),
                phase: "erase".into(),
                lba: off / lbs,
                blocks: len / lbs,
                attempts,
                why,
            });
        }
        let n = narrow(off, len, lbs, why.clone(), &mut op);
        let (good, bad) = (n.good, n.bad);
        self.rec.bytes += good;
        if !self.opts.skip_errors {
            // Every piece written the second time: nothing to abort for.
            let Some((o, l, w)) = bad.first().cloned() else {
                return Ok(());
            };
            return Err(EraseError::Aborted {
                device: self.dev(),
                phase: "erase".into(),
                lba: o / lbs,
                blocks: l / lbs,
                attempts,
                why: w,
            });
        }
        self.wholly_failed = if good == 0 && len > lbs {
            self.wholly_failed + 1
        } else {
            0
        };
        if self.wholly_failed >= WHOLLY_FAILED_GONE {
            return Err(EraseError::Unwritable {
                device: self.dev(),
                lba: off / lbs,
                blocks: len / lbs,
                before: self.wholly_failed - 1,
                why,
            });
        }
        for (o, l, e) in bad {
            let s = Skipped {
                pass,
                start: o,
                end: o + l,
                error: e,
            };
            self.journal.skipped(&s)?;
            self.rec.skipped.push(s);
        }
        Ok(())
    }
}

fn errno_str(neg: i32) -> String {
    std::io::Error::from_raw_os_error(-neg).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seed_is_the_fnv1a_hash_of_the_drive_and_pattern() {
        // FNV-1a 64 reference values.
        assert_eq!(fnv(""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(fnv("a"), 0xaf63_dc4c_8601_ec8c);
    }
}

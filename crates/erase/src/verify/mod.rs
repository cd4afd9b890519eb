//! The verify stage: read an erased drive back and say what was found.
//!
//! [`sample`] decides which blocks (NIST SP 800-88 sampling, or every
//! block), [`read`] reads them with O_DIRECT and checks each against the
//! last pass's pattern. Ranges the erase skipped are left out (they are
//! exceptions already). A cryptographic erase leaves indeterminate data, so
//! after one [`prior`] checks that sampled blocks no longer hold what they
//! held before the erase. What comes back is a [`Verification`]: the
//! certificate's section, the unreadable ranges, and whether verification
//! failed or was stopped.

pub mod content;
pub mod prior;
pub mod read;
pub mod sample;

use std::sync::atomic::Ordering;
use std::time::Instant;

pub use read::{read_back, ReadPolicy, VerifyResult, READ_LEN};
pub use sample::{full_plan, sample_plan, Region, SamplePlan, REGION_PERCENT, SUBSECTIONS};

use crate::cert::model::{ExceptionRecord, VerifySection};
use crate::issue;
use crate::journal::Skipped;
use crate::plan::{Drive, Options, VerifyMode};
use crate::sched::{Phase, Progress, Shared};
use crate::EraseError;
use drivelab_device::claim::Claim;
use prior::Prior;

/// Why a resumed erase whose data is the drive's choice is not verified.
pub const NO_PRIOR: &str = "not verified: a resumed run, and the journal holds no sample of the drive from before the erase, so \"not the old data\" cannot be checked (its data is the drive's choice, so there is nothing else to compare); erase again without --resume to verify";

/// The command record of the verification reads.
pub const READS_COMMAND: &str = "io_uring READ (O_DIRECT), verification reads";

/// What the verify stage found on one drive.
#[derive(Debug, Clone)]
pub struct Verification {
    /// The certificate's section.
    pub section: VerifySection,
    /// Unreadable ranges.
    pub exceptions: Vec<ExceptionRecord>,
    /// Read errors met, including ones a retry cured.
    pub errors: Vec<String>,
    /// Reads that succeeded on a retry.
    pub retried: u64,
    /// Why verification failed, when it did.
    pub failure: Option<String>,
    /// Stopped by Ctrl-C before the end.
    pub stopped: bool,
    /// A read-back was asked for but could not be made (a resumed crypto
    /// erase with no sample from before it): the drive is not verified.
    pub unverified: bool,
    /// Read commands and bytes, when anything was read.
    pub reads: Option<(u64, u64)>,
    /// Seconds of the stage.
    pub seconds: f64,
}

impl Verification {
    /// The report's one-line verification result ("full: passed",
    /// "sample failed at LBA 42").
    pub fn summary(&self, mode: VerifyMode) -> String {
        if let (Some(_), Some(d)) = (&self.section.prior_sample, &self.section.detail) {
            return d.clone();
        }
        if self.unverified {
            return NO_PRIOR.into();
        }
        match self.section.mismatch_lba {
            Some(l) => format!("{} failed at LBA {l}", mode.name()),
            None if self.section.excepted_blocks > 0 => format!(
                "{}: {} except {} skipped blocks",
                mode.name(),
                self.section.result,
                self.section.excepted_blocks
            ),
            None => format!("{}: {}", mode.name(), self.section.result),
        }
    }
}

/// `plan` without the LBA ranges `[start, end)` in `skipped`.
pub fn plan_minus(plan: SamplePlan, skipped: &[(u64, u64)]) -> SamplePlan {
    if skipped.is_empty() {
        return plan;
    }
    let cut = |(a, b): (u64, u64), &(s, e): &(u64, u64)| -> Vec<(u64, u64)> {
        if e <= a || s >= b {
            return vec![(a, b)];
        }
        let mut v = Vec::new();
        if a < s {
            v.push((a, s));
        }
        if e < b {
            v.push((e, b));
        }
        v
    };
    let mut out = Vec::new();
    for r in plan.regions {
        let mut pieces = vec![(r.first, r.first + r.blocks)];
        for sk in skipped {
            pieces = pieces.into_iter().flat_map(|p| cut(p, sk)).collect();
        }
        out.extend(pieces.into_iter().map(|(a, b)| Region {
            first: a,
            blocks: b - a,
        }));
    }
    SamplePlan {
        regions: out,
        ..plan
    }
}

/// Verify one drive after its erase: `skipped` are the ranges the erase
/// gave up (only the last pass's, and discard-first's, are left out).
/// `prior` is the sample taken before an erase whose data is the drive's
/// choice (None when none could be: a resumed run).
#[allow(clippy::too_many_arguments)]
pub(crate) fn verify_drive(
    d: &Drive,
    claim: &Claim,
    prior: Option<&Prior>,
    opts: &Options,
    seed: u64,
    skipped: &[Skipped],
    shared: &Shared<'_>,
    progress: &Progress,
) -> Result<Verification, EraseError> {
    let started = Instant::now();
    let mut v = Verification {
        section: VerifySection {
            mode: opts.verify.name().into(),
            result: "not performed".into(),
            bytes_read: 0,
            coverage_percent: 0.0,
            subsections: 0,
            regions: 0,
            mismatch_lba: None,
            detail: None,
            excepted_blocks: 0,
            reads: "io_uring READ (O_DIRECT, bypassing the page cache), 1 MiB at most per read"
                .into(),
            prior_sample: None,
        },
        exceptions: Vec::new(),
        errors: Vec::new(),
        retried: 0,
        failure: None,
        stopped: false,
        unverified: false,
        reads: None,
        seconds: 0.0,
    };
    let m = d.choice.method;
    if opts.verify != VerifyMode::None && m.leaves_indeterminate_data(opts.crypto) {
        match prior {
            Some(p) => not_the_old_data(&mut v, d, claim, p, opts.crypto)?,
            None => {
                v.unverified = true;
                v.section.result = "not performed".into();
                v.section.detail = Some(NO_PRIOR.into());
            }
        }
    } else if opts.verify != VerifyMode::None {
        let res = read_drive(d, opts, seed, skipped, shared, progress, &mut v.section)?;
        judge(&mut v, res, d.size, opts.skip_errors);
    }
    v.seconds = started.elapsed().as_secs_f64();
    Ok(v)
}

/// Read `prior`'s blocks again and judge them: a block still holding its
/// old content fails the verification.
fn not_the_old_data(
    v: &mut Verification,
    d: &Drive,
    claim: &Claim,
    p: &Prior,
    crypto: bool,
) -> Result<(), EraseError> {
    let after = prior::read_again(claim, d.lbs, p).map_err(|e| EraseError::Io {
        device: d.dev.path.display().to_string(),
        what: "verify (O_DIRECT read of the blocks sampled before the erase)".into(),
        source: e,
    })?;
    let bytes = after.len() as u64 * u64::from(d.lbs);
    v.reads = Some((after.len() as u64, bytes));
    v.section.bytes_read = bytes;
    v.section.coverage_percent = bytes as f64 * 100.0 / d.size.max(1) as f64;
    v.section.regions = after.len() as u64;
    v.section.reads = "O_DIRECT read through the claim, one block per read; SHA-256 of each block before the erase kept, never its data".into();
    let ps = prior::judge_prior(p, &after);
    let line = ps.result(crypto);
    v.section.detail = Some(line.clone());
    if ps.unchanged > 0 {
        v.section.result = "failed".into();
        v.section.mismatch_lba = ps.unchanged_lbas.first().copied();
        v.failure = Some(format!("verification failed: {line}"));
    } else {
        v.section.result = line.split(':').next().unwrap_or("passed").to_string();
    }
    v.section.prior_sample = Some(ps);
    Ok(())
}

/// Plan the reads (sample or full, minus skipped ranges) and read them.
fn read_drive(
    d: &Drive,
    opts: &Options,
    seed: u64,
    skipped: &[Skipped],
    shared: &Shared<'_>,
    progress: &Progress,
    section: &mut VerifySection,
) -> Result<VerifyResult, EraseError> {
    let lbs = u64::from(d.lbs);
    let passes = opts.passes.max(1);
    let skipped_lbas: Vec<(u64, u64)> = skipped
        .iter()
        .filter(|s| s.pass == passes - 1 || s.pass == u32::MAX)
        .map(|s| (s.start / lbs, s.end.div_ceil(lbs)))
        .collect();
    let total_blocks = d.size / lbs;
    let plan = match opts.verify {
        VerifyMode::Full => full_plan(total_blocks),
        _ => sample_plan(total_blocks, seed),
    };
    section.subsections = plan.subsections;
    section.regions = plan.region_count;
    let planned = plan.blocks();
    let plan = plan_minus(plan, &skipped_lbas);
    let excepted = planned - plan.blocks();
    if excepted > 0 {
        section.excepted_blocks = excepted;
        section.detail = Some(format!(
            "{excepted} blocks ({} bytes) the erase skipped as unwritable were not read back; they are the certificate's exceptions",
            excepted * lbs
        ));
    }
    progress.enter(Phase::Verifying, 0, plan.blocks() * lbs);
    let gen = issue::pass_generator(opts, d.lbs, seed, passes - 1)?;
    let policy = ReadPolicy {
        retries: opts.retries,
        skip: opts.skip_errors,
    };
    read_back(
        &d.dev.path,
        d.lbs,
        &plan,
        &gen,
        policy,
        |b| {
            progress.done.fetch_add(b, Ordering::Relaxed);
        },
        || shared.stopped(),
    )
    .map_err(|e| EraseError::Io {
        device: d.dev.path.display().to_string(),
        what: "verify (O_DIRECT read)".into(),
        source: e,
    })
}

/// Turn what the reads found into the section's result, the exceptions,
/// and a failure or a stop.
fn judge(v: &mut Verification, res: VerifyResult, size: u64, skip_errors: bool) {
    v.reads = Some((res.reads, res.bytes_read));
    v.section.bytes_read = res.bytes_read;
    v.section.coverage_percent = res.bytes_read as f64 * 100.0 / size.max(1) as f64;
    v.errors = res.errors;
    v.retried = res.retried;
    v.exceptions = res
        .unreadable
        .iter()
        .map(|(f, n, e)| ExceptionRecord {
            phase: "verify".into(),
            first_lba: *f,
            blocks: *n,
            error: e.clone(),
        })
        .collect();
    if let Some((lba, what)) = res.mismatch {
        v.section.result = "failed".into();
        v.section.mismatch_lba = Some(lba);
        v.failure = Some(format!("verification failed at LBA {lba}: {what}"));
        v.section.detail = Some(what);
    } else if res.stopped && !skip_errors && !res.unreadable.is_empty() {
        let (f, n, e) = &res.unreadable[0];
        v.section.result = "failed".into();
        v.failure = Some(format!(
            "verification read failed at LBA {f} (+{n} blocks): {e}; --on-error retry-skip would skip it"
        ));
    } else if res.gone {
        let (f, n, e) = res.unreadable.last().cloned().unwrap_or_default();
        v.section.result = "failed".into();
        v.failure = Some(format!(
            "verification stopped at LBA {f} (+{n} blocks): every block of the last {WHOLLY} reads failed ({e}); the drive no longer answers",
            WHOLLY = read::WHOLLY_FAILED_GONE
        ));
    } else if res.stopped {
        v.stopped = true;
    } else if res.unreadable.is_empty() {
        v.section.result = "passed".into();
    } else {
        v.section.result = "passed with unreadable ranges".into();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plan_minus_skipped_ranges() {
        let plan = SamplePlan {
            regions: vec![
                Region {
                    first: 0,
                    blocks: 10,
                },
                Region {
                    first: 20,
                    blocks: 10,
                },
            ],
            subsections: 0,
            region_count: 2,
        };
        let p = plan_minus(plan, &[(5, 7), (18, 22), (29, 40)]);
        let got: Vec<(u64, u64)> = p.regions.iter().map(|r| (r.first, r.blocks)).collect();
        assert_eq!(got, vec![(0, 5), (7, 3), (22, 7)]);
    }

    fn verification() -> Verification {
        Verification {
            section: VerifySection {
                mode: "full".into(),
                result: "not performed".into(),
                bytes_read: 0,
                coverage_percent: 0.0,
                subsections: 0,
                regions: 1,
                mismatch_lba: None,
                detail: None,
                excepted_blocks: 0,
                reads: String::new(),
                prior_sample: None,
            },
            exceptions: Vec::new(),
            errors: Vec::new(),
            retried: 0,
            failure: None,
            stopped: false,
            unverified: false,
            reads: None,
            seconds: 0.0,
        }
    }

    #[test]
    fn judging_what_the_reads_found() {
        let mut v = verification();
        let ok = VerifyResult {
            bytes_read: 4096,
            reads: 1,
            ..VerifyResult::default()
        };
        judge(&mut v, ok.clone(), 8192, true);
        assert_eq!(v.section.result, "passed");
        assert_eq!(v.section.coverage_percent, 50.0);
        assert_eq!(v.summary(VerifyMode::Full), "full: passed");
        // Skipped ranges left out of the read-back are said in the summary.
        v.section.excepted_blocks = 8;
        assert_eq!(
            v.summary(VerifyMode::Full),
            "full: passed except 8 skipped blocks"
        );
        v.section.excepted_blocks = 0;

        let mut v = verification();
        let bad = VerifyResult {
            mismatch: Some((42, "byte 3 is 0x01, not 0x00".into())),
            ..ok.clone()
        };
        judge(&mut v, bad, 8192, true);
        assert_eq!(v.section.result, "failed");
        assert_eq!(v.summary(VerifyMode::Sample), "sample failed at LBA 42");
        assert!(v.failure.as_deref().unwrap().contains("LBA 42"));

        // Abort on an unreadable block fails; retry-skip passes with it.
        let unreadable = VerifyResult {
            unreadable: vec![(7, 1, "read error: EIO".into())],
            stopped: true,
            ..ok.clone()
        };
        let mut v = verification();
        judge(&mut v, unreadable.clone(), 8192, false);
        assert!(v.failure.as_deref().unwrap().contains("LBA 7 (+1 blocks)"));
        assert_eq!(v.exceptions.len(), 1);
        let mut v = verification();
        judge(
            &mut v,
            VerifyResult {
                stopped: false,
                ..unreadable.clone()
            },
            8192,
            true,
        );
        assert_eq!(v.section.result, "passed with unreadable ranges");
        // A drive that stopped answering under retry-skip: failed, not
        // "passed with unreadable ranges" over what little was read.
        let mut v = verification();
        judge(
            &mut v,
            VerifyResult {
                unreadable: vec![
                    (0, 2048, "read error: EIO".into()),
                    (2048, 2048, "read error: EIO".into()),
                ],
                gone: true,
                ..unreadable
            },
            8192,
            true,
        );
        assert_eq!(v.section.result, "failed");
        assert!(!v.stopped);
        let f = v.failure.as_deref().unwrap();
        assert!(
            f.contains("LBA 2048 (+2048 blocks)") && f.contains("no longer answers"),
            "{f}"
        );
        // Ctrl-C: stopped, neither passed nor failed.
        let mut v = verification();
        judge(
            &mut v,
            VerifyResult {
                stopped: true,
                ..ok
            },
            8192,
            true,
        );
        assert!(v.stopped && v.failure.is_none());
        assert_eq!(v.section.result, "not performed");
    }
}

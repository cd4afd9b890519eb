//! Assembling a drive's certificate from what its erase did, and writing
//! it: the signed JSON and the HTML page, named after the drive and the
//! moment, next to the journals.

use std::path::{Path, PathBuf};

use drivelab_device::blockdev::Kind;
use drivelab_device::health::around::AroundWork;
use drivelab_patterns::Pattern;
use ed25519_dalek::SigningKey;

use super::model::{
    Certificate, CommandRecord, DriveSection, EraseSection, ExceptionRecord, TimingSection,
    ToolSection, FORMAT,
};
use super::sign::{hex, sign};
use crate::clock;
use crate::issue::Record;
use crate::journal::{self, DriveJournal, Skipped};
use crate::outcome::EraseResult;
use crate::plan::{Drive, Method, Options, VerifyMode};
use crate::verify::Verification;
use crate::EraseError;

/// Everything one drive's erase leaves for its certificate.
pub(crate) struct Evidence<'a> {
    /// The drive.
    pub drive: &'a Drive,
    /// What was asked.
    pub opts: &'a Options,
    /// Seed of per-block patterns.
    pub seed: u64,
    /// This run's journal (earlier runs, first start).
    pub journal: &'a DriveJournal,
    /// What the issue stage sent (with the verification reads).
    pub rec: &'a Record,
    /// What the verify stage found.
    pub verification: &'a Verification,
    /// This run's start (unix seconds, nanoseconds).
    pub started: (u64, u32),
    /// Seconds of the erase phase.
    pub erase_seconds: f64,
    /// Whether BLKZEROOUT was offloaded.
    pub offloaded: Option<bool>,
    /// Health before and after, what changed, the write corroboration.
    pub health: Option<&'a AroundWork>,
}

fn media(d: &Drive) -> String {
    match d.dev.kind {
        Kind::Loop | Kind::Ram | Kind::Zram => "virtual".into(),
        _ if d.dev.rotational => "rotating magnetic".into(),
        _ => "solid state".into(),
    }
}

fn technique(m: Method, crypto: bool, pattern: &Pattern) -> String {
    match m {
        Method::NvmeFormat | Method::NvmeSanitize | Method::AtaSanitize | Method::ScsiSanitize
            if crypto =>
        {
            "cryptographic erase".into()
        }
        Method::NvmeFormat => "user data erase (format)".into(),
        Method::NvmeSanitize => "NVMe sanitize (block erase or overwrite)".into(),
        Method::AtaSanitize => "sanitize (overwrite or block erase)".into(),
        Method::ScsiSanitize => "SCSI sanitize (block erase or overwrite)".into(),
        Method::AtaSecurityErase => "ATA security erase, normal mode (zeroes)".into(),
        Method::AtaSecurityEraseEnhanced => "ATA enhanced security erase (vendor pattern)".into(),
        Method::Discard => "discard (drive guarantees zeroes)".into(),
        _ => format!("overwrite with {pattern}"),
    }
}

fn drive_section(d: &Drive) -> DriveSection {
    let idn = d
        .caps
        .as_ref()
        .map(|c| c.identity.clone())
        .unwrap_or_default();
    DriveSection {
        path: d.dev.path.display().to_string(),
        vendor: d.dev.vendor.clone().or(idn.vendor),
        model: d.dev.model.clone().or(idn.model),
        serial: d.serial().map(String::from),
        firmware: d.dev.firmware.clone().or(idn.firmware),
        wwid: d.dev.wwid.clone(),
        kind: format!("{:?}", d.dev.kind).to_lowercase(),
        transport: d.offers.transport.clone(),
        media: media(d),
        capacity_bytes: d.size,
        logical_sector: d.lbs,
        physical_sector: d.dev.physical_sector.0,
    }
}

fn erase_section(e: &Evidence<'_>) -> EraseSection {
    let (d, opts) = (e.drive, e.opts);
    EraseSection {
        method: d.choice.method,
        method_reason: d.choice.reason.clone(),
        nist_category: d.choice.method.nist_category(opts.crypto).into(),
        technique: technique(d.choice.method, opts.crypto, &opts.pattern),
        pattern: opts.pattern.to_string(),
        seed: e.seed,
        passes: opts.passes.max(1),
        commands: e
            .rec
            .commands
            .iter()
            .map(|(k, &(count, bytes))| CommandRecord {
                command: k.clone(),
                count,
                bytes,
            })
            .collect(),
        bytes_this_run: e.rec.bytes,
        bytes_resumed: e.journal.resumed_bytes(),
        offloaded: e.offloaded,
        stream_tuning: e.rec.tuning.map(|t| (t.transfer, t.depth)),
        discard_first: opts.discard_first,
    }
}

/// When: this run's and earlier runs' starts, the end, the durations.
fn timing_section(e: &Evidence<'_>, end: (u64, u32)) -> TimingSection {
    let t0 = e.started;
    let earlier = e.journal.earlier.as_ref();
    let mut runs: Vec<String> = earlier
        .map(|s| s.runs.iter().map(|&r| clock::rfc3339(r, 0)).collect())
        .unwrap_or_default();
    runs.push(clock::rfc3339(t0.0, t0.1));
    let start = earlier
        .map(|s| s.header.started.clone())
        .unwrap_or_else(|| clock::rfc3339(t0.0, t0.1));
    let first_unix = earlier
        .and_then(|s| s.runs.first().copied())
        .unwrap_or(t0.0);
    // A resumed run knows earlier starts to the second only.
    let first_nanos = if earlier.is_some() {
        0.0
    } else {
        f64::from(t0.1) * 1e-9
    };
    TimingSection {
        start,
        end: clock::rfc3339(end.0, end.1),
        erase_seconds: e.erase_seconds,
        verify_seconds: e.verification.seconds,
        duration_seconds: (end.0 as f64 + f64::from(end.1) * 1e-9)
            - (first_unix as f64 + first_nanos),
        runs,
    }
}

/// The ranges skipped by the erase (per pass, or discard-first's), then
/// the ones the read-back could not read.
fn exceptions(e: &Evidence<'_>) -> Vec<ExceptionRecord> {
    let lbs = u64::from(e.drive.lbs);
    let mut v: Vec<ExceptionRecord> = e
        .rec
        .skipped
        .iter()
        .map(|s| ExceptionRecord {
            phase: if s.pass == u32::MAX {
                "discard".into()
            } else {
                format!("erase pass {}", s.pass + 1)
            },
            first_lba: s.start / lbs,
            blocks: (s.end - s.start).div_ceil(lbs),
            error: s.error.clone(),
        })
        .collect();
    v.extend(e.verification.exceptions.iter().cloned());
    v
}

/// Whether some pass had every byte skipped after errors: nothing of it is
/// on the drive (a drive that is gone, or whose every block fails, fails
/// every write), so "erased with exceptions" would certify a drive that was
/// not written at all, its read-back "passed" over no block. Says which
/// pass and the first error.
pub(crate) fn nothing_written(skipped: &[Skipped], size: u64, passes: u32) -> Option<String> {
    (0..passes.max(1)).find_map(|p| {
        let mine = skipped.iter().filter(|s| s.pass == p);
        let bytes: u64 = mine.clone().map(|s| s.end.saturating_sub(s.start)).sum();
        (size > 0 && bytes >= size).then(|| {
            let first = mine.map(|s| s.error.as_str()).next().unwrap_or("");
            format!("every write of erase pass {} failed ({first})", p + 1)
        })
    })
}

/// The certificate of a finished erase that ended at `end`.
pub(crate) fn certificate(e: &Evidence<'_>, end: (u64, u32)) -> Certificate {
    let exceptions = exceptions(e);
    let failure = e.verification.failure.clone().or_else(|| {
        nothing_written(&e.rec.skipped, e.drive.size, e.opts.passes).map(|why| {
            format!(
                "{}: {why}; the drive is not erased",
                e.drive.dev.path.display()
            )
        })
    });
    // A read-back that could not be made (a resumed crypto erase with no
    // sample from before it) certifies nothing: the result says "not
    // verified", as under --verify none.
    let result = EraseResult::finished(
        failure.is_some(),
        !exceptions.is_empty(),
        e.opts.verify != VerifyMode::None && !e.verification.unverified,
        e.drive.choice.method,
    );
    let mut errors = e.rec.errors.clone();
    errors.extend(e.verification.errors.iter().cloned());
    errors.extend(e.drive.notes.iter().cloned());
    Certificate {
        format: FORMAT.into(),
        result,
        failure,
        drive: drive_section(e.drive),
        erase: erase_section(e),
        timing: timing_section(e, end),
        verification: e.verification.section.clone(),
        exceptions,
        errors,
        retried: e.rec.retried + e.verification.retried,
        health: e.health.cloned(),
        capacity_restored: e.drive.restored.clone(),
        parties: e.opts.parties.section(e.drive.asset_tag.clone()),
        tool: ToolSection {
            name: "drivelab".into(),
            version: e.opts.version.clone(),
            host: clock::hostname(),
            kernel: clock::kernel(),
            command_line: e.opts.command_line.clone(),
            machine: clock::machine(),
        },
    }
}

/// Sign `c` and write it to `dir` as `erase-<serial or name>-<end>.json`
/// with its `.html` page; returns both paths.
pub fn write(
    c: &Certificate,
    d: &Drive,
    dir: &Path,
    key: &SigningKey,
) -> Result<(PathBuf, PathBuf), EraseError> {
    // 20261122T045501.123Z: unique per drive even for quick reruns.
    let stamp = c.timing.end.replace([':', '-'], "");
    let base = format!(
        "erase-{}-{stamp}",
        journal::file_key(d.serial(), &d.dev.path)
    );
    let jfile = dir.join(format!("{base}.json"));
    let hfile = dir.join(format!("{base}.html"));
    let signed = sign(c, key)?;
    let wr = |p: &Path, s: &str| {
        drivelab_device::output::Output::new(p)
            .option("certificate")
            .write(s.as_bytes())
            .map_err(|e| EraseError::Certificate(e.to_string()))
    };
    wr(&jfile, &signed)?;
    let name = jfile
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let pk = hex(key.verifying_key().as_bytes());
    wr(&hfile, &super::html::html(c, &name, &pk))?;
    Ok((jfile, hfile))
}

#[cfg(test)]
mod tests {
    use super::nothing_written;
    use crate::journal::Skipped;

    fn skip(pass: u32, start: u64, end: u64) -> Skipped {
        Skipped {
            pass,
            start,
            end,
            error: "Input/output error (os error 5)".into(),
        }
    }

    #[test]
    fn a_pass_with_every_byte_skipped_wrote_nothing() {
        let mib = 1u64 << 20;
        // A drive that went away: every 1 MiB write of pass 1 skipped.
        let all: Vec<Skipped> = (0..8)
            .rev()
            .map(|k| skip(0, k * mib, (k + 1) * mib))
            .collect();
        assert_eq!(
            nothing_written(&all, 8 * mib, 1).as_deref(),
            Some("every write of erase pass 1 failed (Input/output error (os error 5))")
        );
        // A few bad blocks: erased with exceptions, not failed.
        assert_eq!(nothing_written(&[skip(0, 4096, 8192)], 8 * mib, 1), None);
        // Pass 2 of 2 lost entirely, pass 1 complete.
        let second: Vec<Skipped> = (0..8).map(|k| skip(1, k * mib, (k + 1) * mib)).collect();
        assert!(nothing_written(&second, 8 * mib, 2).is_some_and(|w| w.contains("pass 2")));
        assert_eq!(nothing_written(&[], 8 * mib, 1), None);
    }
}

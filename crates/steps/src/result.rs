//! What a test run found: one serde struct per step (the JSON document's
//! `steps[]`), and the DMM-style text log rendered from it.
//!
//! The log lists, per step, what DMM lists (seed 000): timestamp and
//! `TEST n of m`, test type, order, block count, transfer length, start
//! block, data pattern, queue depth, FUA, stop-on-error type; then the
//! completion time, Transfer Rate, I/O Per Second, Number of Blocks
//! Transferred, fastest / slowest / average command completion time and its
//! standard deviation, and PASSED or FAILED. DMM prints "MB/sec" for what
//! is MiB/s (REFERENCE.md); drivelab prints the unit it means: MiB/sec.
//! Timestamps are UTC.

use std::borrow::Cow;
use std::fmt::Write as _;

use serde::{Deserialize, Serialize};

use drivelab_patterns::{Miscompare, MiscompareKind};
use drivelab_stats::Summary;

/// How a step ended.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "UPPERCASE")]
pub enum Status {
    /// Every command succeeded and every block compared.
    Passed,
    /// At least one command failed or block miscompared.
    Failed,
    /// Not run: an earlier step stopped the sequence, or the run was
    /// interrupted before it (and what a stored step that names no
    /// status reads as).
    #[default]
    Skipped,
    /// Stopped by Ctrl-C / SIGTERM.
    Interrupted,
}

impl Status {
    /// The word the result JSON holds ("PASSED", "FAILED", "SKIPPED",
    /// "INTERRUPTED").
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Passed => "PASSED",
            Status::Failed => "FAILED",
            Status::Skipped => "SKIPPED",
            Status::Interrupted => "INTERRUPTED",
        }
    }
}

/// Figures of one pass (a write pass or a read pass) of a step.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct PassResult {
    /// "write" or "read" (a verify's read pass compares).
    pub op: Cow<'static, str>,
    /// Whether data read was compared against the pattern.
    pub compared: bool,
    /// Wall time of the pass, ns.
    pub runtime_ns: u64,
    /// Commands completed successfully.
    pub ios: u64,
    /// Logical blocks transferred.
    pub blocks: u64,
    /// Bytes transferred.
    pub bytes: u64,
    /// Bytes per second.
    pub bw_bytes: f64,
    /// MiB per second (DMM's "MB/sec").
    pub mib_per_s: f64,
    /// Commands per second.
    pub iops: f64,
    /// Command completion times, ns (submission to completion).
    pub clat_ns: Summary,
    /// Completion-time percentiles, ns, keyed as fio keys them
    /// (`"50.000000"`, `"99.000000"`, `"99.900000"`).
    pub clat_percentiles_ns: std::collections::BTreeMap<String, u64>,
}

/// Contiguous logical blocks that failed the same way when re-issued one
/// piece at a time.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct BadRange {
    /// First bad LBA.
    pub first: u64,
    /// Last bad LBA (inclusive).
    pub last: u64,
    /// Blocks in the range (`last - first + 1`).
    pub count: u64,
    /// errno of the failing piece (0 for a short transfer).
    pub errno: i32,
    /// What failed, e.g. "No data available (os error 61)".
    pub message: String,
    /// The device's sense for a one-block SCSI READ of `first`, decoded
    /// ("MEDIUM ERROR: Unrecovered read error (03/11/00) …"), when the device
    /// answers SCSI commands and the range was read.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sense: Option<String>,
}

impl BadRange {
    /// `LBA 80000..80015 (16 blocks)` or `LBA 80000 (1 block)`.
    pub fn span(&self) -> String {
        if self.count == 1 {
            format!("LBA {} (1 block)", self.first)
        } else {
            format!("LBA {}..{} ({} blocks)", self.first, self.last, self.count)
        }
    }
}

/// One error a step found.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Failure {
    /// A command failed (after its retries).
    Io {
        /// "read" or "write".
        op: Cow<'static, str>,
        /// First LBA of the command.
        lba: u64,
        /// Blocks in the command.
        blocks: u64,
        /// errno (0 for a short transfer).
        errno: i32,
        /// What happened, e.g. "Input/output error (os error 5)".
        message: String,
        /// Retries spent on it.
        retries: u32,
        /// The blocks of the command that still fail when it is re-issued
        /// in smaller pieces (halved down to single blocks, synchronous,
        /// O_DIRECT): the exact bad LBAs, contiguous ones as one range.
        /// Empty when narrowing found no failing block (the error did not
        /// repeat) or could not run.
        bad_ranges: Vec<BadRange>,
    },
    /// A block read back differs from the pattern.
    Miscompare {
        /// LBA of the block.
        lba: u64,
        /// Offset of the first differing byte within the block, bytes.
        block_offset: u64,
        /// Offset of that byte on the device, bytes.
        byte_offset: u64,
        /// What kind of wrong: "data", "corrupted", "misdirected", "stale",
        /// "seed_mismatch".
        kind: Cow<'static, str>,
        /// For a misdirected block: the LBA it was written for.
        belongs_to: Option<u64>,
        /// One line describing the kind (from the patterns crate).
        description: String,
        /// Up to 32 expected bytes from the first differing one, hex.
        expected: String,
        /// The bytes found there, hex.
        found: String,
    },
}

impl Failure {
    /// One line for logs and the JSON `error` field.
    pub fn line(&self) -> String {
        match self {
            Failure::Io {
                op,
                lba,
                blocks,
                message,
                retries,
                bad_ranges,
                ..
            } => {
                let cmd = format!(
                    "{op} of LBA {lba}-{} ({blocks} blocks)",
                    lba + blocks.saturating_sub(1)
                );
                if bad_ranges.is_empty() {
                    format!("I/O error on {cmd}: {message}, after {retries} retries")
                } else {
                    let spans: Vec<String> = bad_ranges.iter().map(BadRange::span).collect();
                    format!(
                        "I/O error at {}: {message} (the failed command: {cmd}, after {retries} retries)",
                        spans.join(", ")
                    )
                }
            }
            Failure::Miscompare {
                lba,
                block_offset,
                byte_offset,
                description,
                ..
            } => format!(
                "miscompare at LBA {lba}, byte offset {byte_offset} (offset {block_offset} in the block): {description}"
            ),
        }
    }
}

/// One step's parameters and outcome.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct StepResult {
    /// 1-based position in the sequence.
    pub index: usize,
    /// Steps in the sequence.
    pub of: usize,
    /// write, read, verify, write-verify.
    pub kind: Cow<'static, str>,
    /// DMM's name for the test type.
    pub test_type: Cow<'static, str>,
    /// sequential, random, butterfly.
    pub order: Cow<'static, str>,
    /// First LBA.
    pub start_block: u64,
    /// Blocks in the range.
    pub block_count: u64,
    /// Logical block size, bytes.
    pub block_size: u32,
    /// Shortest transfer, blocks.
    pub transfer_min_blocks: u64,
    /// Longest transfer, blocks (equal to the shortest when fixed).
    pub transfer_max_blocks: u64,
    /// Pattern name.
    pub pattern: String,
    /// Seed of data, order and lengths (reproduces a `random` run).
    pub seed: u64,
    /// Pass number stamped into `stamped` blocks.
    pub pass: u64,
    /// Queue depth.
    pub queue_depth: u32,
    /// FUA on writes.
    pub fua: bool,
    /// stop-test, stop-sequence, continue.
    pub on_error: Cow<'static, str>,
    /// Retries per failed command.
    pub retries: u32,
    /// Start time, UTC, `MM/DD/YYYY  HH:MM:SS` as DMM prints it.
    pub started: String,
    /// End time, same format.
    pub finished: String,
    /// Start time, seconds since the Unix epoch.
    pub started_unix: u64,
    /// Outcome.
    pub status: Status,
    /// Wall time of all passes, ns.
    pub runtime_ns: u64,
    /// Bytes per second over all passes.
    pub bw_bytes: f64,
    /// MiB per second over all passes (DMM's "Transfer Rate ... MB/sec").
    pub mib_per_s: f64,
    /// Commands per second over all passes.
    pub iops: f64,
    /// Logical blocks transferred (a write-verify counts both passes).
    pub blocks_transferred: u64,
    /// Command completion times over all passes, ns.
    pub clat_ns: Summary,
    /// Per pass figures.
    pub passes: Vec<PassResult>,
    /// Failed commands (after retries).
    pub io_errors: u64,
    /// Blocks that miscompared.
    pub miscompares: u64,
    /// Blocks found bad (unreadable or unwritable) by narrowing the failed
    /// commands, over every failure listed.
    pub bad_blocks: u64,
    /// The command a write-same step sent (absent for the other kinds).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub command: Option<String>,
    /// The first failures in the order found (at most [`FAILURE_LIMIT`]).
    #[serde(deserialize_with = "drivelab_report::metrics::or_default")]
    pub failures: Vec<Failure>,
    /// The first failure as one line; absent when the step passed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// Why the step was skipped or stopped early, if it was.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    /// A write step on a drive with health of its own: its health before
    /// and after the step, what changed, and whether its write counter
    /// corroborates the bytes written.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[serde(deserialize_with = "drivelab_report::metrics::or_default")]
    pub health: Option<drivelab_device::health::around::AroundWork>,
}

/// Most failures kept in detail per step (all are counted).
pub const FAILURE_LIMIT: usize = 100;

/// The whole run: the document `--output-format json` prints.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct TestReport {
    /// Device or file tested.
    pub target: String,
    /// Logical block size, bytes.
    pub block_size: u32,
    /// Capacity, logical blocks.
    pub capacity_blocks: u64,
    /// Whether it was opened with O_DIRECT.
    pub direct: bool,
    /// The steps, in order (skipped ones included).
    pub steps: Vec<StepResult>,
    /// Every step passed.
    pub passed: bool,
    /// The write claim when a step writes: the safety assessment made
    /// before the first write and how the target was held.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[serde(deserialize_with = "drivelab_report::metrics::or_default")]
    pub claim: Option<drivelab_device::claim::ClaimRecord>,
}

/// `1234567` → `1,234,567` (as DMM prints block counts).
pub fn grouped(n: u64) -> String {
    let s = n.to_string();
    let mut out = String::with_capacity(s.len() + s.len() / 3);
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// Seconds since the epoch → `MM/DD/YYYY  HH:MM:SS` (UTC), DMM's layout.
pub fn dmm_time(unix: u64) -> String {
    let ((y, m, d), secs) = drivelab_engine::clock::civil_from_unix(unix);
    format!(
        "{m:02}/{d:02}/{y:04}  {:02}:{:02}:{:02}",
        secs / 3600,
        secs % 3600 / 60,
        secs % 60
    )
}

fn ms(ns: f64) -> String {
    format!("{:.3} ms", ns / 1e6)
}

fn pattern_title(p: &str) -> String {
    let mut c = p.chars();
    match c.next() {
        Some(f) => f.to_uppercase().collect::<String>() + c.as_str(),
        None => String::new(),
    }
}

const RULE: &str = "——————————————————————————————————————————————————————————————";

/// The log entry of one step, DMM's layout.
pub fn render_step(s: &StepResult) -> String {
    let mut o = String::new();
    if s.status == Status::Skipped {
        let _ = writeln!(
            o,
            "{}  TEST {} of {}:    {} SKIPPED ({})",
            s.started,
            s.index,
            s.of,
            s.test_type,
            s.note.as_deref().unwrap_or("not run")
        );
        let _ = writeln!(o, "{RULE}");
        return o;
    }
    let _ = writeln!(o, "{}  TEST {} of {}:\n", s.started, s.index, s.of);
    let _ = writeln!(
        o,
        "{}; {}; for {} Blocks",
        s.test_type,
        pattern_title(&s.order),
        grouped(s.block_count)
    );
    if let Some(cmd) = &s.command {
        let _ = writeln!(
            o,
            " Write Same Commands of up to {} ({:#06X}) Blocks",
            grouped(s.transfer_max_blocks),
            s.transfer_max_blocks
        );
        let _ = writeln!(o, " Command: {cmd}");
    } else if s.transfer_min_blocks == s.transfer_max_blocks {
        let _ = writeln!(
            o,
            " Fixed-Length Transfers of {} ({:#06X}) Blocks",
            s.transfer_max_blocks, s.transfer_max_blocks
        );
    } else {
        let _ = writeln!(
            o,
            " Variable-Length Transfers of {} ({:#06X}) to {} ({:#06X}) Blocks",
            s.transfer_min_blocks,
            s.transfer_min_blocks,
            s.transfer_max_blocks,
            s.transfer_max_blocks
        );
    }
    let _ = writeln!(o, " Start Block: {}", grouped(s.start_block));
    let extra = match s.pattern.as_str() {
        "random" => format!(", seed {}", s.seed),
        "stamped" => format!(", seed {}, pass {}", s.seed, s.pass),
        _ => String::new(),
    };
    let _ = writeln!(o, " Data Pattern: {}{extra}", pattern_title(&s.pattern));
    let _ = writeln!(o, " Queue Depth = {}", s.queue_depth);
    let _ = writeln!(o, " FUA = {}", if s.fua { "ON" } else { "OFF" });
    let on_error = match &*s.on_error {
        "stop-test" => "Stop Current Test",
        "stop-sequence" => "Stop Sequence",
        _ => "Continue on Error",
    };
    let _ = writeln!(o, " Stop-on-Error Type: {on_error}");
    let _ = writeln!(o, " Retries per Command: {}", s.retries);
    let _ = writeln!(o, " Logical Block Size: {} bytes", s.block_size);
    let _ = writeln!(o);
    let ending = match s.status {
        Status::Passed => "Test Completed Successfully",
        Status::Interrupted => "Test Interrupted",
        _ if s.on_error == "continue" => "Test Completed with Errors",
        _ => "Test Stopped on Error",
    };
    let _ = writeln!(o, "{}  {ending}\n", s.finished);
    let _ = writeln!(o, "Transfer Rate: {:.2} MiB/sec", s.mib_per_s);
    let _ = writeln!(o, " I/O Per Second: {:.2} IO/sec", s.iops);
    let _ = writeln!(
        o,
        " Number of Blocks Transferred: {}",
        grouped(s.blocks_transferred)
    );
    let _ = writeln!(o, " Fastest Command Completion Time: {}", ms(s.clat_ns.min));
    let _ = writeln!(o, " Slowest Command Completion Time: {}", ms(s.clat_ns.max));
    let _ = writeln!(
        o,
        " Average Command Completion Time: {}",
        ms(s.clat_ns.mean)
    );
    let _ = writeln!(
        o,
        " Standard Deviation of Command Completion Times: {}",
        ms(s.clat_ns.stddev)
    );
    if s.passes.len() > 1 {
        for p in &s.passes {
            let name = match (&*p.op, p.compared) {
                ("write", _) => "Write Pass",
                (_, true) => "Read-Compare Pass",
                _ => "Read Pass",
            };
            let _ = writeln!(
                o,
                " {name}: {:.2} MiB/sec, {:.2} IO/sec, {} Blocks, {:.3} s",
                p.mib_per_s,
                p.iops,
                grouped(p.blocks),
                p.runtime_ns as f64 / 1e9
            );
        }
    }
    if s.io_errors + s.miscompares > 0 {
        render_errors(&mut o, s);
    }
    if let Some(n) = &s.note {
        let _ = writeln!(o, " Note: {n}");
    }
    if let Some(h) = &s.health {
        for l in h.lines("drive") {
            let _ = writeln!(o, " Health: {}", l.trim_start_matches("drive: "));
        }
    }
    let verdict = match s.status {
        Status::Passed => "PASSED",
        Status::Interrupted => "INTERRUPTED",
        _ => "FAILED",
    };
    let _ = writeln!(o, "\n{}  {verdict:>55}", s.finished);
    let _ = writeln!(o, "{RULE}");
    o
}

/// The errors of a step that had any: the counts, then each failure listed
/// (bad ranges with their sense, expected and found data).
fn render_errors(o: &mut String, s: &StepResult) {
    let _ = writeln!(o);
    let _ = writeln!(
        o,
        " Errors: {} failed command(s), {} miscompared block(s), {} bad block(s)",
        s.io_errors, s.miscompares, s.bad_blocks
    );
    for f in &s.failures {
        let _ = writeln!(o, " ERROR: {}", f.line());
        if let Failure::Io { bad_ranges, .. } = f {
            for b in bad_ranges {
                let _ = writeln!(o, "   Bad: {}: {}", b.span(), b.message);
                if let Some(sense) = &b.sense {
                    let _ = writeln!(o, "        sense: {sense}");
                }
            }
        }
        if let Failure::Miscompare {
            expected, found, ..
        } = f
        {
            let _ = writeln!(o, "   Expected: {expected}");
            let _ = writeln!(o, "   Found:    {found}");
        }
    }
    let shown = s.failures.len() as u64;
    if s.io_errors + s.miscompares > shown {
        let _ = writeln!(
            o,
            " … and {} more (the first {shown} are listed)",
            s.io_errors + s.miscompares - shown
        );
    }
}

/// The log header: what is tested.
pub fn render_header(r: &TestReport) -> String {
    format!(
        "drivelab test: {} ({} blocks of {} bytes, {}; times UTC)\n{RULE}\n",
        r.target,
        grouped(r.capacity_blocks),
        r.block_size,
        if r.direct {
            "direct I/O"
        } else {
            "buffered I/O"
        }
    )
}

/// The steps side by side (when there are several): blocks, time, rate
/// and commands of each, and how a write-same compared with a streamed
/// write of the same drive.
pub fn render_summary(r: &TestReport) -> String {
    let mut o = String::new();
    if r.steps.len() < 2 {
        return o;
    }
    let _ = writeln!(o, "Summary, side by side (same target):");
    let _ = writeln!(
        o,
        " {:>4}  {:<13} {:>15} {:>11} {:>13} {:>11}  result",
        "TEST", "kind", "blocks", "time (s)", "MiB/sec", "commands"
    );
    for s in &r.steps {
        let ios: u64 = s.passes.iter().map(|p| p.ios).sum();
        let status = match s.status {
            Status::Passed => "passed",
            Status::Failed => "failed",
            Status::Skipped => "skipped",
            Status::Interrupted => "interrupted",
        };
        let _ = writeln!(
            o,
            " {:>4}  {:<13} {:>15} {:>11.3} {:>13.2} {:>11}  {status}",
            s.index,
            s.kind,
            grouped(s.blocks_transferred),
            s.runtime_ns as f64 / 1e9,
            s.mib_per_s,
            grouped(ios),
        );
    }
    let done = |k: &str| {
        r.steps
            .iter()
            .find(|s| s.kind == k && s.status == Status::Passed && s.blocks_transferred > 0)
    };
    if let (Some(w), Some(ws)) = (done("write"), done("write-same")) {
        let _ = writeln!(
            o,
            " write-same (test {}) vs streamed write (test {}): {:.2} vs {:.2} MiB/sec, {:.2}x the rate; {} vs {} commands",
            ws.index,
            w.index,
            ws.mib_per_s,
            w.mib_per_s,
            ws.bw_bytes / w.bw_bytes.max(f64::MIN_POSITIVE),
            grouped(ws.passes.iter().map(|p| p.ios).sum()),
            grouped(w.passes.iter().map(|p| p.ios).sum()),
        );
    }
    let _ = writeln!(o, "{RULE}");
    o
}

/// The last line: overall verdict.
pub fn render_footer(r: &TestReport) -> String {
    let failed = r
        .steps
        .iter()
        .filter(|s| matches!(s.status, Status::Failed | Status::Interrupted))
        .count();
    let summary = render_summary(r);
    if r.passed {
        format!("{summary}All {} test(s) PASSED\n", r.steps.len())
    } else {
        format!(
            "{summary}{failed} of {} test(s) FAILED or interrupted, {} skipped\n",
            r.steps.len(),
            r.steps
                .iter()
                .filter(|s| s.status == Status::Skipped)
                .count()
        )
    }
}

/// Errors found so far in a step: the first few in detail, all counted.
#[derive(Debug, Default)]
pub struct Findings {
    /// Detailed failures, at most [`FAILURE_LIMIT`].
    pub failures: Vec<Failure>,
    /// Failed commands.
    pub io_errors: u64,
    /// Miscompared blocks.
    pub miscompares: u64,
    /// Blocks narrowing found bad.
    pub bad_blocks: u64,
}

impl Findings {
    pub(crate) fn push(&mut self, f: Failure) {
        if self.failures.len() < FAILURE_LIMIT {
            self.failures.push(f);
        }
    }

    pub(crate) fn miscompare(&mut self, m: &Miscompare, block_size: u64) {
        self.miscompares += 1;
        if self.failures.len() >= FAILURE_LIMIT {
            return;
        }
        let (kind, belongs_to) = match m.kind {
            MiscompareKind::Data => ("data", None),
            MiscompareKind::Corrupted => ("corrupted", None),
            MiscompareKind::Misdirected { belongs_to } => ("misdirected", Some(belongs_to)),
            MiscompareKind::Stale { .. } => ("stale", None),
            MiscompareKind::SeedMismatch => ("seed_mismatch", None),
        };
        self.push(Failure::Miscompare {
            lba: m.lba,
            block_offset: m.block_offset as u64,
            byte_offset: m.lba * block_size + m.block_offset as u64,
            kind: kind.into(),
            belongs_to,
            description: m.kind.to_string(),
            expected: hex(m.expected()),
            found: hex(m.found()),
        });
    }

    /// Whether anything failed.
    pub fn any(&self) -> bool {
        self.io_errors + self.miscompares > 0
    }
}

fn hex(b: &[u8]) -> String {
    let mut s = String::with_capacity(b.len() * 3);
    for (i, x) in b.iter().enumerate() {
        if i > 0 {
            s.push(' ');
        }
        s.push_str(&format!("{x:02X}"));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dmm_time_matches_known_dates() {
        // 2012-07-18 11:54:13 UTC = 1342612453 (date -u -d @1342612453).
        assert_eq!(dmm_time(1_342_612_453), "07/18/2012  11:54:13");
        assert_eq!(dmm_time(0), "01/01/1970  00:00:00");
        // 2000-02-29 23:59:59 UTC.
        assert_eq!(dmm_time(951_868_799), "02/29/2000  23:59:59");
    }

    #[test]
    fn grouped_inserts_thousands_separators() {
        assert_eq!(grouped(1_953_525_168), "1,953,525,168");
        assert_eq!(grouped(0), "0");
        assert_eq!(grouped(128), "128");
        assert_eq!(grouped(1000), "1,000");
    }
}

//! The certificate as it is written and read: its sections, each a plain
//! serialized record.

use serde::{Deserialize, Serialize};

use crate::outcome::EraseResult;
pub use crate::plan::parties::{Customer, PartiesSection};
use crate::plan::{Method, Restored};
use drivelab_device::health::around::AroundWork;

/// Format tag of the JSON file.
pub const FORMAT: &str = "drivelab-erase-certificate/1";

/// The drive.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DriveSection {
    /// Device node erased.
    pub path: String,
    /// Vendor, when reported.
    pub vendor: Option<String>,
    /// Model.
    pub model: Option<String>,
    /// Serial number.
    pub serial: Option<String>,
    /// Firmware revision.
    pub firmware: Option<String>,
    /// World-wide name.
    pub wwid: Option<String>,
    /// Kind (loop, nvme, ata, scsi, ...).
    pub kind: String,
    /// Transport of passthrough commands.
    pub transport: String,
    /// Media type (`rotating magnetic`, `solid state`, `virtual`).
    pub media: String,
    /// Capacity, bytes.
    pub capacity_bytes: u64,
    /// Logical sector size, bytes.
    pub logical_sector: u32,
    /// Physical sector size, bytes.
    pub physical_sector: u32,
}

/// One kind of command sent, with how many.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CommandRecord {
    /// What was sent (name, opcode, how).
    pub command: String,
    /// How many times.
    pub count: u64,
    /// Bytes covered on the drive.
    pub bytes: u64,
}

/// How the drive was erased.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EraseSection {
    /// Method.
    pub method: Method,
    /// Why this method (auto's reasoning, or "requested").
    pub method_reason: String,
    /// NIST SP 800-88 category: Clear or Purge.
    pub nist_category: String,
    /// Technique in words (overwrite, block erase, cryptographic erase).
    pub technique: String,
    /// Pattern name.
    pub pattern: String,
    /// Seed of per-block patterns (random, stamped).
    pub seed: u64,
    /// Passes over the whole drive.
    pub passes: u32,
    /// Commands sent, in this run (earlier runs are in `runs`).
    pub commands: Vec<CommandRecord>,
    /// Bytes of the drive covered by this run (over all passes).
    pub bytes_this_run: u64,
    /// Bytes covered by earlier, interrupted runs (from the journal).
    pub bytes_resumed: u64,
    /// Whether BLKZEROOUT was offloaded to the device (zeroout only).
    pub offloaded: Option<bool>,
    /// Final stream transfer length in bytes and queue depth.
    pub stream_tuning: Option<(u64, u32)>,
    /// Whether the drive was discarded before the overwrite.
    pub discard_first: bool,
}

/// When.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TimingSection {
    /// Start of the first run (RFC 3339 UTC).
    pub start: String,
    /// End (RFC 3339 UTC).
    pub end: String,
    /// Seconds of this run's erase phase.
    pub erase_seconds: f64,
    /// Seconds of verification.
    pub verify_seconds: f64,
    /// Seconds from the first run's start to the end.
    pub duration_seconds: f64,
    /// Start times of every run (more than one after `--resume`).
    pub runs: Vec<String>,
}

/// How the result was checked.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct VerifySection {
    /// none, sample or full.
    pub mode: String,
    /// passed, failed, not performed, not applicable.
    pub result: String,
    /// Bytes read back.
    pub bytes_read: u64,
    /// Share of the drive read, percent.
    pub coverage_percent: f64,
    /// Subsections (sample).
    pub subsections: u64,
    /// Regions read (sample: 2 per subsection plus first and last LBA).
    pub regions: u64,
    /// First mismatching LBA, if any.
    pub mismatch_lba: Option<u64>,
    /// What differed, or what was not read.
    pub detail: Option<String>,
    /// Blocks the erase skipped as unwritable, left out of the read-back
    /// (they are the exceptions); absent when none.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub excepted_blocks: u64,
    /// How reads were made.
    pub reads: String,
    /// The "not the old data" check of an erase whose data is the drive's
    /// choice; absent otherwise (and in certificates from before it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prior_sample: Option<PriorSample>,
}

/// Blocks sampled before an erase whose data is the drive's choice and
/// read again after it (see `verify::prior`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct PriorSample {
    /// The seed that placed the blocks.
    pub seed: u64,
    /// Blocks sampled (one per slice of the capacity, plus first and last).
    pub sampled: u64,
    /// Blocks whose content changed.
    pub changed: u64,
    /// Blocks all-zero or all-0xFF before the erase: what an erase may
    /// leave, so neither changed nor failing.
    pub blank_before: u64,
    /// Changed blocks that read back as zeroes (a crypto erase should not
    /// leave zeroes; reported, not failing).
    pub zeroed: u64,
    /// Blocks that still hold their old content (the verification fails).
    pub unchanged: u64,
    /// The first of those LBAs.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unchanged_lbas: Vec<u64>,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// A range not erased (or not verified) after errors.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ExceptionRecord {
    /// erase or verify.
    pub phase: String,
    /// First LBA.
    pub first_lba: u64,
    /// Blocks.
    pub blocks: u64,
    /// The error.
    pub error: String,
}

impl ExceptionRecord {
    /// "PHASE: LBA FIRST + N blocks: ERROR".
    pub fn describe(&self) -> String {
        format!(
            "{}: LBA {} + {} blocks: {}",
            self.phase, self.first_lba, self.blocks, self.error
        )
    }
}

/// The tool and where it ran.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolSection {
    /// drivelab.
    pub name: String,
    /// Version.
    pub version: String,
    /// Host name.
    pub host: String,
    /// Kernel release.
    pub kernel: String,
    /// The command line.
    pub command_line: String,
    /// The host's identity from its firmware (DMI), when it has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub machine: Option<MachineSection>,
}

/// The host's identity as its firmware's DMI tables give it
/// (`/sys/class/dmi/id`); a field the firmware leaves empty is absent.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct MachineSection {
    /// System vendor (`sys_vendor`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vendor: Option<String>,
    /// System product name (`product_name`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// System serial number (`product_serial`, readable by root).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub serial: Option<String>,
    /// System UUID (`product_uuid`, readable by root).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub uuid: Option<String>,
}

/// The signed record.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Certificate {
    /// [`FORMAT`].
    pub format: String,
    /// "erased", "erased with exceptions", "overwritten, not verified",
    /// "failed", ...
    pub result: EraseResult,
    /// Why it failed, when it did.
    pub failure: Option<String>,
    /// The drive.
    pub drive: DriveSection,
    /// The erase.
    pub erase: EraseSection,
    /// Timing.
    pub timing: TimingSection,
    /// Verification.
    pub verification: VerifySection,
    /// Ranges skipped after errors (make the result "erased with exceptions").
    pub exceptions: Vec<ExceptionRecord>,
    /// Errors met (including retried ones that later succeeded).
    pub errors: Vec<String>,
    /// Retries that succeeded.
    pub retried: u64,
    /// The tool.
    pub tool: ToolSection,
    /// The drive's health before and after the erase (its own SMART /
    /// log pages / NVMe health, as `drivelab health` shows them), what
    /// changed, and whether its write counter corroborates the overwrite;
    /// absent for devices without health of their own.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub health: Option<AroundWork>,
    /// Capacity hidden from the host that was restored before the erase
    /// (`--restore-native-max`), and the erase then covered.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub capacity_restored: Option<Restored>,
    /// Who erased the drive, for whom, and the drive's asset tag; absent
    /// when none was given (and in certificates made before it existed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parties: Option<PartiesSection>,
}

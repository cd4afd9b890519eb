//! `drivelab device DEV <op>`: send one passthrough command (SCSI, ATA over
//! SAT, NVMe) and show the device's own answer, decoded.
//!
//! This is the raw tool under `drivelab erase`, and what the QEMU tests drive
//! inside the guest: `probe` says which commands a device supports, the
//! read ops (`inquiry`, `read-capacity`, `identify`, `read`, `sct-status`)
//! show decoded answers, and the writing ops (`write-same`, `unmap`,
//! `sct-write-same`, `ata-sanitize`, `nvme-*`) send exactly one command (or
//! one per 65536 blocks for NVMe Write Zeroes). Writing ops need `--yes`
//! and pass the same safety check as every other writer (`--force` to
//! override). A device that refuses a command gives one line "… not
//! supported by this device (decoded sense/status)" and exit status 1; in
//! JSON the same document carries `error` plus the decoded fields.

use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::Context;
use clap::{Args, Subcommand, ValueEnum};
use serde_json::{json, Value};

use drivelab_device::ata::{
    self, AtaError, AtaSanitize, AtaSanitizeOp, AtaSanitizeStatus, SctWriteSame,
    SctWriteSameFunction,
};
use drivelab_device::caps::{self, Capabilities};
use drivelab_device::nvme::{
    self, NvmeCommand, NvmeData, NvmeDevice, NvmeError, SanitizeAction as NvmeSanAct,
};
use drivelab_device::scsi::{self, WriteSameOptions};
use drivelab_device::sg::{SgDevice, SgError};
use drivelab_device::units::{BlockCount, Lba};

use crate::output::OutputArgs;

/// Arguments of `drivelab device`.
#[derive(Args, Debug)]
pub struct DeviceArgs {
    /// The device: /dev/sdX, /dev/sgN, /dev/nvmeXnY or /dev/nvmeX.
    #[arg(value_name = "DEV")]
    pub device: PathBuf,
    /// The command to send.
    #[command(subcommand)]
    pub op: Op,
}

/// Options every op takes.
#[derive(Args, Debug, Clone, Default)]
pub struct Common {
    /// Command timeout in milliseconds (default 60000; 600000 for format,
    /// sanitize and foreground SCT Write Same).
    #[arg(long = "timeout-ms", value_name = "MS")]
    pub timeout_ms: Option<u32>,
    #[command(flatten)]
    pub out: OutputArgs,
}

/// The consent every writing op needs.
#[derive(Args, Debug, Clone, Default)]
pub struct WriteGuard {
    /// Confirm that this command may destroy data on DEV.
    #[arg(long)]
    pub yes: bool,
    /// Write even if DEV is in use, has a partition table or a filesystem
    /// (a read-only or system device is still refused).
    #[arg(long)]
    pub force: bool,
}

/// A block range.
#[derive(Args, Debug, Clone)]
pub struct Range {
    /// First logical block (decimal or 0x hex).
    #[arg(long, value_parser = parse_u64)]
    pub lba: u64,
    /// Number of logical blocks (decimal or 0x hex).
    #[arg(long, value_parser = parse_u64)]
    pub count: u64,
}

/// The ops.
#[derive(Subcommand, Debug)]
pub enum Op {
    /// Which erase/write commands the device supports (asks the device; reads only).
    Probe(ProbeArgs),
    /// SCSI INQUIRY: standard data, or a VPD page with --page.
    Inquiry(InquiryArgs),
    /// SCSI READ CAPACITY(16) (falls back to (10)).
    ReadCapacity(PlainArgs),
    /// ATA IDENTIFY DEVICE over SAT, or NVMe Identify Controller + Namespace.
    Identify(PlainArgs),
    /// READ through SG_IO (NVMe Read on an NVMe namespace): prints a SHA-256 of
    /// the data, or the sense and failing LBA.
    Read(ReadArgs),
    /// SCSI WRITE SAME(10/16) of one block (pattern byte or file) over a range.
    WriteSame(WriteSameArgs),
    /// SCSI UNMAP of a range.
    Unmap(RangeWriteArgs),
    /// ATA SCT Write Same of a 32-bit pattern over a range (SATA).
    SctWriteSame(SctWriteSameArgs),
    /// ATA SCT status (SMART READ LOG E0h).
    SctStatus(PlainArgs),
    /// ATA SANITIZE DEVICE: overwrite, crypto, block erase, or status.
    AtaSanitize(AtaSanitizeArgs),
    /// NVMe Write Zeroes over a range (split into 65536-block commands).
    NvmeWriteZeroes(NvmeWriteZeroesArgs),
    /// NVMe Dataset Management (deallocate) of a range.
    NvmeDsm(RangeWriteArgs),
    /// NVMe Format NVM of the namespace.
    NvmeFormat(NvmeFormatArgs),
    /// NVMe Sanitize, or its status log.
    NvmeSanitize(NvmeSanitizeArgs),
}

/// `probe`.
#[derive(Args, Debug)]
pub struct ProbeArgs {
    #[command(flatten)]
    pub c: Common,
}

/// Ops with no options of their own.
#[derive(Args, Debug)]
pub struct PlainArgs {
    #[command(flatten)]
    pub c: Common,
}

/// `inquiry`.
#[derive(Args, Debug)]
pub struct InquiryArgs {
    /// VPD page code (e.g. 0x00, 0x80, 0x83, 0xb0, 0xb1, 0xb2).
    #[arg(long, value_parser = parse_u8)]
    pub page: Option<u8>,
    #[command(flatten)]
    pub c: Common,
}

/// `read`.
#[derive(Args, Debug)]
pub struct ReadArgs {
    #[command(flatten)]
    pub r: Range,
    /// Also write the data read to FILE.
    #[arg(long, value_name = "FILE")]
    pub dump: Option<PathBuf>,
    #[command(flatten)]
    pub c: Common,
}

/// CDB size for WRITE SAME.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum CdbSize {
    /// WRITE SAME(10).
    #[value(name = "10")]
    Ten,
    /// WRITE SAME(16).
    #[value(name = "16")]
    Sixteen,
}

/// `write-same`.
#[derive(Args, Debug)]
pub struct WriteSameArgs {
    #[command(flatten)]
    pub r: Range,
    /// Fill the block with this byte (default 0x00).
    #[arg(long = "pattern-byte", value_parser = parse_u8, conflicts_with = "pattern_file")]
    pub pattern_byte: Option<u8>,
    /// Take the block from this file (its first logical block).
    #[arg(long = "pattern-file", value_name = "FILE")]
    pub pattern_file: Option<PathBuf>,
    /// CDB size: 10 or 16 (default 16).
    #[arg(long, value_enum, default_value = "16")]
    pub cdb: CdbSize,
    /// Set the UNMAP bit (the device may deallocate instead of writing).
    #[arg(long)]
    pub unmap: bool,
    /// Set NDOB (WRITE SAME(16) only): no data block; the device writes zeroes.
    #[arg(long)]
    pub ndob: bool,
    #[command(flatten)]
    pub w: WriteGuard,
    #[command(flatten)]
    pub c: Common,
}

/// `unmap`, `nvme-dsm`.
#[derive(Args, Debug)]
pub struct RangeWriteArgs {
    #[command(flatten)]
    pub r: Range,
    #[command(flatten)]
    pub w: WriteGuard,
    #[command(flatten)]
    pub c: Common,
}

/// `sct-write-same`.
#[derive(Args, Debug)]
pub struct SctWriteSameArgs {
    #[command(flatten)]
    pub r: Range,
    /// The 32-bit pattern (e.g. 0x00000000).
    #[arg(long, value_parser = parse_u32, default_value = "0")]
    pub pattern: u32,
    /// Foreground function (0101h): the command returns when the write is
    /// done. Default: background (0001h), polled through the SCT status.
    #[arg(long)]
    pub foreground: bool,
    /// With background: return at once instead of polling until done.
    #[arg(long = "no-wait")]
    pub no_wait: bool,
    #[command(flatten)]
    pub w: WriteGuard,
    #[command(flatten)]
    pub c: Common,
}

/// ATA sanitize actions.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum AtaSanAction {
    /// OVERWRITE EXT.
    Overwrite,
    /// CRYPTO SCRAMBLE EXT.
    Crypto,
    /// BLOCK ERASE EXT.
    Block,
    /// SANITIZE STATUS EXT.
    Status,
}

/// `ata-sanitize`.
#[derive(Args, Debug)]
pub struct AtaSanitizeArgs {
    /// What to do.
    #[arg(long, value_enum)]
    pub action: AtaSanAction,
    /// Overwrite pattern (32 bits).
    #[arg(long, value_parser = parse_u32, default_value = "0")]
    pub pattern: u32,
    /// Overwrite passes, 1-16.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u8).range(1..=16))]
    pub passes: u8,
    #[command(flatten)]
    pub w: WriteGuard,
    #[command(flatten)]
    pub c: Common,
}

/// `nvme-write-zeroes`.
#[derive(Args, Debug)]
pub struct NvmeWriteZeroesArgs {
    #[command(flatten)]
    pub r: Range,
    /// Set DEAC: the controller may deallocate the blocks (they still read as zeroes).
    #[arg(long)]
    pub deac: bool,
    #[command(flatten)]
    pub w: WriteGuard,
    #[command(flatten)]
    pub c: Common,
}

/// `nvme-format`.
#[derive(Args, Debug)]
pub struct NvmeFormatArgs {
    /// Secure erase setting: 0 none, 1 user data erase, 2 cryptographic erase.
    #[arg(long, value_parser = clap::value_parser!(u8).range(0..=2))]
    pub ses: u8,
    /// LBA format index (default: the one in use, so the block size stays).
    #[arg(long, value_parser = clap::value_parser!(u8).range(0..=63))]
    pub lbaf: Option<u8>,
    #[command(flatten)]
    pub w: WriteGuard,
    #[command(flatten)]
    pub c: Common,
}

/// NVMe sanitize actions.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum NvmeSanAction {
    /// Block erase.
    Block,
    /// Overwrite.
    Overwrite,
    /// Crypto erase.
    Crypto,
    /// Exit failure mode.
    ExitFailure,
    /// Read the Sanitize Status log.
    Status,
}

/// `nvme-sanitize`.
#[derive(Args, Debug)]
pub struct NvmeSanitizeArgs {
    /// What to do.
    #[arg(long, value_enum)]
    pub action: NvmeSanAction,
    /// Overwrite pattern (32 bits).
    #[arg(long, value_parser = parse_u32, default_value = "0")]
    pub pattern: u32,
    #[command(flatten)]
    pub w: WriteGuard,
    #[command(flatten)]
    pub c: Common,
}

fn parse_u64(s: &str) -> Result<u64, String> {
    let t = s.trim().replace('_', "");
    let r = if let Some(h) = t.strip_prefix("0x").or_else(|| t.strip_prefix("0X")) {
        u64::from_str_radix(h, 16)
    } else {
        t.parse()
    };
    r.map_err(|_| format!("'{s}' is not a number (decimal or 0x hex)"))
}
fn parse_u32(s: &str) -> Result<u32, String> {
    parse_u64(s)
        .and_then(|v| u32::try_from(v).map_err(|_| format!("'{s}' does not fit in 32 bits")))
}
fn parse_u8(s: &str) -> Result<u8, String> {
    parse_u64(s).and_then(|v| {
        u8::try_from(v).map_err(|_| format!("'{s}' does not fit in a byte (0x00-0xff)"))
    })
}

/// A failed device command: one line plus the decoded fields for JSON.
struct Failure {
    line: String,
    fields: Value,
}

impl From<SgError> for Failure {
    fn from(e: SgError) -> Self {
        let mut fields = json!({});
        if let Some(s) = e.sense() {
            fields["sense"] = serde_json::to_value(s).unwrap_or(Value::Null);
            if s.is_medium_error() {
                if let Some(lba) = s.information {
                    fields["failing_lba"] = json!(lba);
                }
            }
        }
        if let SgError::Transport {
            host_status,
            driver_status,
            ..
        } = &e
        {
            fields["host_status"] = json!(host_status);
            fields["driver_status"] = json!(driver_status);
        }
        fields["not_supported"] = json!(e.is_not_supported());
        Failure {
            line: e.to_string(),
            fields,
        }
    }
}

impl From<AtaError> for Failure {
    fn from(e: AtaError) -> Self {
        let not_supported = e.is_not_supported();
        let line = match &e {
            // An ATA abort of an SCT/SANITIZE command is how a drive says "no".
            AtaError::Device { name, regs, .. } if regs.error & 0x04 != 0 => {
                format!(
                    "ATA {name} not supported by this device ({})",
                    regs.describe()
                )
            }
            _ => e.to_string(),
        };
        let mut f = match e {
            AtaError::Scsi(s) => Failure::from(s),
            AtaError::PassThroughUnsupported { sense } => Failure {
                line: String::new(),
                fields: json!({ "sense": sense }),
            },
            AtaError::Device { regs, sense, .. } => Failure {
                line: String::new(),
                fields: json!({ "ata": regs, "ata_error_bits": ata::error_bits(regs.error), "sense": sense }),
            },
            AtaError::BadData(_) => Failure {
                line: String::new(),
                fields: json!({}),
            },
        };
        f.line = line;
        f.fields["not_supported"] = json!(not_supported);
        f
    }
}

impl From<NvmeError> for Failure {
    fn from(e: NvmeError) -> Self {
        let mut fields = json!({ "not_supported": e.is_not_supported() });
        if let Some(s) = e.status() {
            fields["nvme_status"] = serde_json::to_value(s).unwrap_or(Value::Null);
        }
        if let NvmeError::Media {
            first_lba, blocks, ..
        } = &e
        {
            fields["failing_lba_range"] = json!([first_lba, first_lba + blocks]);
        }
        Failure {
            line: e.to_string(),
            fields,
        }
    }
}

/// What an op produced: JSON fields and human lines.
struct Answer {
    json: Value,
    text: String,
}

/// Run the subcommand.
pub fn run(a: DeviceArgs) -> anyhow::Result<u8> {
    let dev = a.device.clone();
    let (name, common) = op_meta(&a.op);
    // Low args first: consent and safety, before anything is opened.
    validate(&a.op)?;
    crate::error::device_node(&dev)?;
    if let Some(w) = write_guard(&a.op) {
        check_write_allowed(&dev, name, w)?;
    }
    let result = dispatch(&dev, a.op);
    let out = &common.out;
    match result {
        Ok(ans) => {
            if out.json() {
                let mut doc = json!({ "device": dev.display().to_string(), "op": name });
                merge(&mut doc, ans.json);
                out.emit(&format!("{}\n", serde_json::to_string_pretty(&doc)?))?;
            } else {
                out.emit(&ans.text)?;
            }
            Ok(0)
        }
        Err(f) => {
            // Name the device once: most device errors already start with it.
            let line = if f.line.contains(&dev.display().to_string()) {
                f.line.clone()
            } else {
                format!("{}: {}", dev.display(), f.line)
            };
            if out.json() {
                let mut doc = json!({ "device": dev.display().to_string(), "op": name, "error": line, "exit_status": 1 });
                merge(&mut doc, f.fields);
                out.emit(&format!("{}\n", serde_json::to_string_pretty(&doc)?))?;
            } else {
                eprintln!("drivelab: error: {}", line.replace('\n', " "));
            }
            Ok(1)
        }
    }
}

fn merge(doc: &mut Value, extra: Value) {
    if let (Some(d), Value::Object(e)) = (doc.as_object_mut(), extra) {
        for (k, v) in e {
            d.insert(k, v);
        }
    }
}

fn op_meta(op: &Op) -> (&'static str, Common) {
    match op {
        Op::Probe(a) => ("probe", a.c.clone()),
        Op::Inquiry(a) => ("inquiry", a.c.clone()),
        Op::ReadCapacity(a) => ("read-capacity", a.c.clone()),
        Op::Identify(a) => ("identify", a.c.clone()),
        Op::Read(a) => ("read", a.c.clone()),
        Op::WriteSame(a) => ("write-same", a.c.clone()),
        Op::Unmap(a) => ("unmap", a.c.clone()),
        Op::SctWriteSame(a) => ("sct-write-same", a.c.clone()),
        Op::SctStatus(a) => ("sct-status", a.c.clone()),
        Op::AtaSanitize(a) => ("ata-sanitize", a.c.clone()),
        Op::NvmeWriteZeroes(a) => ("nvme-write-zeroes", a.c.clone()),
        Op::NvmeDsm(a) => ("nvme-dsm", a.c.clone()),
        Op::NvmeFormat(a) => ("nvme-format", a.c.clone()),
        Op::NvmeSanitize(a) => ("nvme-sanitize", a.c.clone()),
    }
}

fn write_guard(op: &Op) -> Option<&WriteGuard> {
    match op {
        Op::WriteSame(a) => Some(&a.w),
        Op::Unmap(a) | Op::NvmeDsm(a) => Some(&a.w),
        Op::SctWriteSame(a) => Some(&a.w),
        Op::AtaSanitize(a) if a.action != AtaSanAction::Status => Some(&a.w),
        Op::NvmeWriteZeroes(a) => Some(&a.w),
        Op::NvmeFormat(a) => Some(&a.w),
        Op::NvmeSanitize(a) if a.action != NvmeSanAction::Status => Some(&a.w),
        _ => None,
    }
}

/// Reject what no device could accept, before anything is opened: a zero
/// count (WRITE SAME with 0 blocks means "to the end of the medium"), NDOB
/// with WRITE SAME(10), and ranges WRITE SAME(10) cannot express.
fn validate(op: &Op) -> anyhow::Result<()> {
    let range = match op {
        Op::Read(a) => Some(&a.r),
        Op::WriteSame(a) => Some(&a.r),
        Op::Unmap(a) | Op::NvmeDsm(a) => Some(&a.r),
        Op::SctWriteSame(a) => Some(&a.r),
        Op::NvmeWriteZeroes(a) => Some(&a.r),
        _ => None,
    };
    if let Some(r) = range {
        if r.count == 0 {
            return Err(crate::error::usage("--count must be at least 1"));
        }
        if r.lba.checked_add(r.count).is_none() {
            return Err(crate::error::usage("--lba + --count overflows 64 bits"));
        }
    }
    if let Op::WriteSame(a) = op {
        if a.cdb == CdbSize::Ten {
            if a.ndob {
                return Err(crate::error::usage(
                    "--ndob needs --cdb 16 (WRITE SAME(10) has no NDOB bit)",
                ));
            }
            if a.r.count > 0xFFFF || a.r.lba > 0xFFFF_FFFF {
                return Err(crate::error::usage(format!(
                    "WRITE SAME(10) takes an LBA below 2^32 and at most 65535 blocks (got LBA {} count {}); use --cdb 16",
                    a.r.lba, a.r.count
                )));
            }
        } else if a.r.count > 0xFFFF_FFFF {
            return Err(crate::error::usage(
                "WRITE SAME(16) takes at most 4294967295 blocks per command",
            ));
        }
    }
    Ok(())
}

fn check_write_allowed(dev: &Path, op: &str, w: &WriteGuard) -> anyhow::Result<()> {
    if !w.yes {
        return Err(crate::error::usage(format!(
            "'device {} {op}' destroys data on {}; add --yes to confirm",
            dev.display(),
            dev.display()
        )));
    }
    use std::os::unix::fs::FileTypeExt;
    let md = std::fs::metadata(dev)
        .map_err(|e| crate::error::usage(format!("cannot open {}: {e}", dev.display())))?;
    if md.file_type().is_block_device() {
        let bd = drivelab_device::blockdev::BlockDevice::from_path(dev)
            .with_context(|| format!("cannot read the sysfs facts of {}", dev.display()))?;
        drivelab_device::safety::check_writable(&bd, w.force)
            .map_err(|r| crate::error::usage(r.to_string()))?;
    } else if md.file_type().is_char_device() {
        if !w.force {
            return Err(crate::error::usage(format!(
                "{} is a character device, which the safety checks cannot see into (mounts, partitions); use the block device, or pass --force",
                dev.display()
            )));
        }
    } else {
        return Err(crate::error::usage(format!(
            "{} is not a device node; give /dev/sdX, /dev/sgN, /dev/nvmeXnY or /dev/nvmeX",
            dev.display()
        )));
    }
    Ok(())
}

fn timeout(c: &Common, default_ms: u32) -> u32 {
    c.timeout_ms.unwrap_or(default_ms)
}

fn open_sg(dev: &Path, c: &Common, default_ms: u32, rw: bool) -> Result<SgDevice, Failure> {
    let mut d = if rw {
        SgDevice::open_rw(dev)?
    } else {
        SgDevice::open(dev)?
    };
    d.set_timeout_ms(timeout(c, default_ms));
    Ok(d)
}

const SHORT: u32 = 60_000;
const LONG: u32 = 600_000;

fn dispatch(dev: &Path, op: Op) -> Result<Answer, Failure> {
    match op {
        Op::Probe(_) => op_probe(dev),
        Op::Inquiry(a) => op_inquiry(dev, &a),
        Op::ReadCapacity(a) => {
            let d = open_sg(dev, &a.c, SHORT, false)?;
            let cap = scsi::read_capacity(&d)?;
            let text = format!(
                "last LBA          {}\nblocks            {}\nblock length      {} bytes\nphysical block    {} bytes\ncapacity          {} bytes\nLBPME             {}\nLBPRZ             {}\nfrom              READ CAPACITY({})\n",
                cap.last_lba,
                cap.blocks().0,
                cap.block_length,
                cap.physical_block_length(),
                cap.blocks().0 * u64::from(cap.block_length),
                cap.lbpme,
                cap.lbprz,
                if cap.from_rc16 { 16 } else { 10 }
            );
            Ok(Answer {
                json: json!({ "capacity": cap, "blocks": cap.blocks().0 }),
                text,
            })
        }
        Op::Identify(a) => op_identify(dev, &a.c),
        Op::Read(a) => op_read(dev, &a),
        Op::WriteSame(a) => op_write_same(dev, &a),
        Op::Unmap(a) => {
            let d = open_sg(dev, &a.c, SHORT, true)?;
            let r = scsi::unmap(&d, &[(Lba(a.r.lba), BlockCount(a.r.count))])?;
            Ok(Answer {
                json: json!({ "lba": a.r.lba, "count": a.r.count, "duration_ms": r.duration_ms }),
                text: format!(
                    "UNMAP of {} blocks at LBA {}: GOOD ({} ms)\n",
                    a.r.count, a.r.lba, r.duration_ms
                ),
            })
        }
        Op::SctWriteSame(a) => op_sct_write_same(dev, &a),
        Op::SctStatus(a) => {
            let d = open_sg(dev, &a.c, SHORT, false)?;
            let s = ata::sct_status(&d)?;
            Ok(Answer {
                text: sct_status_text(&s),
                json: json!({ "sct_status": s }),
            })
        }
        Op::AtaSanitize(a) => op_ata_sanitize(dev, &a),
        Op::NvmeWriteZeroes(a) => {
            let d = open_nvme(dev)?;
            let t0 = std::time::Instant::now();
            let n = nvme::write_zeroes_with_timeout(
                &d,
                Lba(a.r.lba),
                BlockCount(a.r.count),
                a.deac,
                timeout(&a.c, SHORT),
            )?;
            let ms = t0.elapsed().as_millis() as u64;
            Ok(Answer {
                json: json!({ "lba": a.r.lba, "count": a.r.count, "deac": a.deac, "commands": n, "duration_ms": ms }),
                text: format!(
                    "Write Zeroes of {} blocks at LBA {}{}: success, {} command(s), {} ms\n",
                    a.r.count,
                    a.r.lba,
                    if a.deac { " (DEAC)" } else { "" },
                    n,
                    ms
                ),
            })
        }
        Op::NvmeDsm(a) => {
            let d = open_nvme(dev)?;
            nvme::dsm_deallocate(&d, &[(Lba(a.r.lba), BlockCount(a.r.count))])?;
            Ok(Answer {
                json: json!({ "lba": a.r.lba, "count": a.r.count }),
                text: format!(
                    "Dataset Management deallocate of {} blocks at LBA {}: success\n",
                    a.r.count, a.r.lba
                ),
            })
        }
        Op::NvmeFormat(a) => op_nvme_format(dev, &a),
        Op::NvmeSanitize(a) => op_nvme_sanitize(dev, &a),
    }
}

fn open_nvme(dev: &Path) -> Result<NvmeDevice, Failure> {
    Ok(NvmeDevice::open(dev)?)
}

fn yes_no(b: bool) -> &'static str {
    if b {
        "yes"
    } else {
        "no"
    }
}

fn opt<T: std::fmt::Display>(v: &Option<T>) -> String {
    v.as_ref()
        .map(|x| x.to_string())
        .unwrap_or_else(|| "-".into())
}

fn op_probe(dev: &Path) -> Result<Answer, Failure> {
    let c: Capabilities = caps::probe(dev).map_err(|e| Failure {
        line: e.to_string(),
        fields: json!({}),
    })?;
    let mut t = String::new();
    let mut row = |k: &str, v: String| t.push_str(&format!("{k:<30}{v}\n"));
    row(
        "transport",
        serde_json::to_value(c.transport)
            .ok()
            .and_then(|v| v.as_str().map(String::from))
            .unwrap_or_default(),
    );
    row("vendor", opt(&c.identity.vendor));
    row("model", opt(&c.identity.model));
    row("serial", opt(&c.identity.serial));
    row("firmware", opt(&c.identity.firmware));
    row("capacity (blocks)", opt(&c.capacity_blocks));
    row(
        "logical / physical block",
        format!(
            "{} / {}",
            opt(&c.logical_block_size),
            opt(&c.physical_block_size)
        ),
    );
    row(
        "scsi write same 16 / 10",
        format!(
            "{} / {} ({})",
            yes_no(c.scsi_write_same_16),
            yes_no(c.scsi_write_same_10),
            c.scsi_write_same_basis
        ),
    );
    row("max write same blocks", opt(&c.max_write_same_blocks));
    row("scsi unmap", yes_no(c.scsi_unmap).into());
    row("ata sct write same", yes_no(c.ata_sct_write_same).into());
    row(
        "ata sanitize ovw/crypto/blk",
        format!(
            "{} / {} / {}",
            yes_no(c.ata_sanitize.overwrite),
            yes_no(c.ata_sanitize.crypto),
            yes_no(c.ata_sanitize.block)
        ),
    );
    row(
        "ata security erase",
        format!(
            "{}{}",
            yes_no(c.ata_security_erase),
            if c.ata_security_frozen {
                " (frozen)"
            } else {
                ""
            }
        ),
    );
    row("ata trim", yes_no(c.ata_trim).into());
    row(
        "nvme write zeroes",
        format!(
            "{}{}",
            yes_no(c.nvme_write_zeroes),
            if c.nvme_write_zeroes_deac {
                " (deac)"
            } else {
                ""
            }
        ),
    );
    row("nvme dsm", yes_no(c.nvme_dsm).into());
    row(
        "nvme format / crypto",
        format!(
            "{} / {}",
            yes_no(c.nvme_format.supported),
            yes_no(c.nvme_format.crypto_erase)
        ),
    );
    row(
        "nvme sanitize crypto/blk/ovw",
        format!(
            "{} / {} / {}",
            yes_no(c.nvme_sanitize.crypto),
            yes_no(c.nvme_sanitize.block),
            yes_no(c.nvme_sanitize.overwrite)
        ),
    );
    row(
        "reads zero after unmap",
        yes_no(c.reads_zero_after_unmap).into(),
    );
    if let Some(s) = &c.sysfs {
        row("write_zeroes_max_bytes", opt(&s.write_zeroes_max_bytes));
        row("discard_max_bytes", opt(&s.discard_max_bytes));
    }
    row("blkzeroout offload", yes_no(c.blk_zeroout_offload).into());
    row("discard", yes_no(c.discard).into());
    for n in &c.notes {
        row("note", n.clone());
    }
    Ok(Answer {
        json: json!({ "capabilities": c }),
        text: t,
    })
}

fn op_inquiry(dev: &Path, a: &InquiryArgs) -> Result<Answer, Failure> {
    let d = open_sg(dev, &a.c, SHORT, false)?;
    match a.page {
        None => {
            let q = scsi::inquiry(&d)?;
            Ok(Answer {
                text: format!(
                    "vendor            {}\nproduct           {}\nrevision          {}\ndevice type       {} (0x{:02x})\nremovable         {}\n",
                    q.vendor,
                    q.product,
                    q.revision,
                    q.peripheral_type_name,
                    q.peripheral_type,
                    yes_no(q.removable)
                ),
                json: json!({ "inquiry": q }),
            })
        }
        Some(p) => {
            let raw = scsi::vpd(&d, p)?;
            let hex: String = raw.iter().map(|b| format!("{b:02x}")).collect();
            let decoded: Value = match p {
                0x00 => json!({ "supported_pages": scsi::parse_supported_vpd_pages(&raw) }),
                0x80 => json!({ "serial": scsi::parse_unit_serial(&raw) }),
                0x83 => json!({ "designators": scsi::parse_device_identification(&raw) }),
                0xB0 => json!({ "block_limits": scsi::BlockLimits::parse(&raw) }),
                0xB1 => json!({ "block_characteristics": scsi::BlockCharacteristics::parse(&raw) }),
                0xB2 => json!({ "provisioning": scsi::LogicalBlockProvisioning::parse(&raw) }),
                _ => json!({}),
            };
            let mut text = format!("VPD page 0x{p:02x}, {} bytes\n", raw.len());
            if let Value::Object(m) = &decoded {
                for (k, v) in m {
                    text.push_str(&format!(
                        "{k}: {}\n",
                        serde_json::to_string_pretty(v).unwrap_or_default()
                    ));
                }
            }
            text.push_str(&format!("raw: {hex}\n"));
            let mut j = json!({ "page": p, "raw_hex": hex });
            merge(&mut j, decoded);
            Ok(Answer { json: j, text })
        }
    }
}

fn op_identify(dev: &Path, c: &Common) -> Result<Answer, Failure> {
    use std::os::unix::fs::FileTypeExt;
    let is_nvme = match NvmeDevice::open(dev) {
        Ok(d) => {
            let char_nvme = std::fs::metadata(dev)
                .map(|m| m.file_type().is_char_device())
                .unwrap_or(false)
                && dev
                    .file_name()
                    .map(|n| n.to_string_lossy().starts_with("nvme"))
                    .unwrap_or(false);
            (d.nsid().is_some() || char_nvme).then_some(d)
        }
        Err(NvmeError::Permission { path }) => return Err(NvmeError::Permission { path }.into()),
        Err(_) => None,
    };
    if let Some(d) = is_nvme {
        let ctrl = nvme::identify_controller(&d)?;
        let ns = match d.nsid() {
            Some(n) => Some(nvme::identify_namespace(&d, n)?),
            None => None,
        };
        let mut text = format!(
            "model             {}\nserial            {}\nfirmware          {}\nvendor id         0x{:04x}\nMDTS              {}\nONCS              0x{:04x} (write zeroes {}, DSM {}, write uncorrectable {})\nFNA               0x{:02x} (crypto erase {})\nSANICAP           0x{:08x} (crypto {}, block {}, overwrite {})\n",
            ctrl.model,
            ctrl.serial,
            ctrl.firmware,
            ctrl.vid,
            ctrl.mdts,
            ctrl.oncs,
            yes_no(ctrl.write_zeroes),
            yes_no(ctrl.dsm),
            yes_no(ctrl.write_uncorrectable),
            ctrl.fna,
            yes_no(ctrl.crypto_erase),
            ctrl.sanicap,
            yes_no(ctrl.sanitize_crypto),
            yes_no(ctrl.sanitize_block),
            yes_no(ctrl.sanitize_overwrite)
        );
        if let Some(n) = &ns {
            text.push_str(&format!(
                "NSZE / NCAP       {} / {} blocks\nLBA format        {} ({} bytes, {} metadata)\nDLFEAT            0x{:02x} (deallocated reads {}, DEAC {})\n",
                n.nsze,
                n.ncap,
                n.lbaf_in_use,
                n.block_size,
                n.metadata_size,
                n.dlfeat,
                n.deallocate_reads,
                yes_no(n.write_zeroes_deac)
            ));
        }
        return Ok(Answer {
            json: json!({ "transport": "nvme", "controller": ctrl, "namespace": ns }),
            text,
        });
    }
    let d = open_sg(dev, c, SHORT, false)?;
    let id = ata::identify_device(&d)?;
    let text = format!(
        "model             {}\nserial            {}\nfirmware          {}\ncapacity          {} sectors\nsector size       {} logical / {} physical\n48-bit            {}\nSCT / Write Same  {} / {}\nsanitize          {} (overwrite {}, crypto {}, block {})\nsecurity          {} (enabled {}, locked {}, frozen {})\nTRIM              {} (deterministic {}, zeroes {})\n",
        id.model,
        id.serial,
        id.firmware,
        id.capacity_sectors,
        id.logical_sector_size,
        id.physical_sector_size,
        yes_no(id.lba48),
        yes_no(id.sct_supported),
        yes_no(id.sct_write_same),
        yes_no(id.sanitize),
        yes_no(id.sanitize_overwrite),
        yes_no(id.sanitize_crypto),
        yes_no(id.sanitize_block_erase),
        yes_no(id.security_supported),
        yes_no(id.security_enabled),
        yes_no(id.security_locked),
        yes_no(id.security_frozen),
        yes_no(id.trim),
        yes_no(id.trim_deterministic),
        yes_no(id.trim_reads_zero)
    );
    Ok(Answer {
        json: json!({ "transport": "ata-via-sat", "identify": id }),
        text,
    })
}

fn block_length(d: &SgDevice) -> Result<u32, Failure> {
    let cap = scsi::read_capacity(d)?;
    if cap.block_length == 0 || cap.block_length > 1 << 20 {
        return Err(Failure {
            line: format!(
                "READ CAPACITY reported a block length of {} bytes, which is not usable",
                cap.block_length
            ),
            fields: json!({ "capacity": cap }),
        });
    }
    Ok(cap.block_length)
}

/// The NVMe namespace behind `dev`, if it is one.
fn nvme_namespace(dev: &Path) -> Option<NvmeDevice> {
    NvmeDevice::open(dev).ok().filter(|d| d.nsid().is_some())
}

fn op_read(dev: &Path, a: &ReadArgs) -> Result<Answer, Failure> {
    if let Some(nd) = nvme_namespace(dev) {
        return op_read_nvme(&nd, a);
    }
    let d = open_sg(dev, &a.c, SHORT, false)?;
    let bl = block_length(&d)?;
    let bytes = a
        .r
        .count
        .checked_mul(u64::from(bl))
        .filter(|&b| b <= 256 << 20)
        .ok_or_else(|| Failure {
            line: format!("a read of {} blocks of {bl} bytes exceeds the 256 MiB this command buffers; read less", a.r.count),
            fields: json!({}),
        })?;
    let mut buf = vec![0u8; bytes as usize];
    // One READ per chunk the kernel can map (see transfer_limit).
    let per_cmd = (transfer_limit(dev) / u64::from(bl)).max(1);
    let (mut got, mut ms, mut cmds) = (0usize, 0u64, 0u64);
    for (i, chunk) in buf
        .chunks_mut((per_cmd * u64::from(bl)) as usize)
        .enumerate()
    {
        let lba = a.r.lba + i as u64 * per_cmd;
        let n = chunk.len() as u64 / u64::from(bl);
        let r = scsi::read(&d, Lba(lba), BlockCount(n), chunk)?;
        got += r.transferred(chunk.len());
        ms += u64::from(r.duration_ms);
        cmds += 1;
    }
    let digest = sha256::hex(&buf[..got]);
    if let Some(p) = &a.dump {
        std::fs::write(p, &buf[..got]).map_err(|e| Failure {
            line: format!("cannot write {}: {e}", p.display()),
            fields: json!({}),
        })?;
    }
    Ok(Answer {
        json: json!({
            "lba": a.r.lba, "count": a.r.count, "block_length": bl, "bytes": got,
            "commands": cmds, "duration_ms": ms, "sha256": digest,
        }),
        text: format!(
            "READ of {} blocks at LBA {}: GOOD, {} bytes, {} command(s), {} ms\nsha256 {}\n",
            a.r.count, a.r.lba, got, cmds, ms, digest
        ),
    })
}

/// Bytes one passthrough command may move for `dev`: the kernel maps the
/// user buffer page by page, so stay within max_hw_sectors_kb and
/// max_segments (from sysfs); 128 KiB when sysfs says nothing (always safe).
fn transfer_limit(dev: &Path) -> u64 {
    caps::sysfs_facts(dev)
        .and_then(|f| f.passthrough_transfer_limit())
        .unwrap_or(128 * 1024)
        .clamp(4096, 64 << 20)
}

fn op_read_nvme(d: &NvmeDevice, a: &ReadArgs) -> Result<Answer, Failure> {
    let nsid = d.require_nsid()?;
    let ns = nvme::identify_namespace(d, nsid)?;
    let bs = ns.block_size;
    if bs == 0 {
        return Err(Failure {
            line: "Identify Namespace reports no usable LBA format".into(),
            fields: json!({ "namespace": ns }),
        });
    }
    let mdts = nvme::identify_controller(d)
        .ok()
        .filter(|c| c.mdts > 0 && c.mdts < 20)
        .map(|c| 4096u64 << c.mdts)
        .unwrap_or(u64::MAX);
    let max = mdts.min(transfer_limit(d.path()));
    let bytes = a
        .r
        .count
        .checked_mul(u64::from(bs))
        .filter(|&b| b <= 256 << 20)
        .ok_or_else(|| Failure {
            line: format!(
                "a read of {} blocks of {bs} bytes exceeds the 256 MiB this command buffers; read less",
                a.r.count
            ),
            fields: json!({}),
        })?;
    let mut buf = vec![0u8; bytes as usize];
    let t0 = std::time::Instant::now();
    let n = nvme::read(d, Lba(a.r.lba), BlockCount(a.r.count), bs, max, &mut buf)?;
    let ms = t0.elapsed().as_millis() as u64;
    let digest = sha256::hex(&buf);
    if let Some(p) = &a.dump {
        std::fs::write(p, &buf).map_err(|e| Failure {
            line: format!("cannot write {}: {e}", p.display()),
            fields: json!({}),
        })?;
    }
    Ok(Answer {
        json: json!({
            "transport": "nvme", "lba": a.r.lba, "count": a.r.count, "block_length": bs,
            "bytes": buf.len(), "commands": n, "duration_ms": ms, "sha256": digest,
        }),
        text: format!(
            "NVMe Read of {} blocks at LBA {}: success, {} bytes, {} command(s), {} ms\nsha256 {}\n",
            a.r.count,
            a.r.lba,
            buf.len(),
            n,
            ms,
            digest
        ),
    })
}

fn op_write_same(dev: &Path, a: &WriteSameArgs) -> Result<Answer, Failure> {
    let d = open_sg(dev, &a.c, SHORT, true)?;
    let bl = block_length(&d)? as usize;
    let block = match &a.pattern_file {
        Some(p) => {
            let data = std::fs::read(p).map_err(|e| Failure {
                line: format!("cannot read {}: {e}", p.display()),
                fields: json!({}),
            })?;
            if data.len() < bl {
                return Err(Failure {
                    line: format!(
                        "{} holds {} bytes; WRITE SAME needs one whole {bl}-byte block",
                        p.display(),
                        data.len()
                    ),
                    fields: json!({}),
                });
            }
            data[..bl].to_vec()
        }
        None => vec![a.pattern_byte.unwrap_or(0); bl],
    };
    let use16 = a.cdb == CdbSize::Sixteen;
    let r = scsi::write_same_with(
        &d,
        Lba(a.r.lba),
        BlockCount(a.r.count),
        &block,
        WriteSameOptions {
            use16,
            unmap: a.unmap,
            ndob: a.ndob,
        },
    )?;
    let cdb = if use16 { 16 } else { 10 };
    Ok(Answer {
        json: json!({
            "lba": a.r.lba, "count": a.r.count, "cdb": cdb, "unmap": a.unmap, "ndob": a.ndob,
            "block_length": bl, "block_sha256": sha256::hex(&block), "duration_ms": r.duration_ms,
        }),
        text: format!(
            "WRITE SAME({cdb}) of {} blocks at LBA {}: GOOD ({} ms)\n",
            a.r.count, a.r.lba, r.duration_ms
        ),
    })
}

fn sct_status_text(s: &ata::SctStatus) -> String {
    format!(
        "SCT status: extended status 0x{:04x}{}, action 0x{:04x}, function 0x{:04x}, current LBA {}, device state {}\n",
        s.extended_status,
        if s.in_progress() { " (running)" } else { "" },
        s.action_code,
        s.function_code,
        s.current_lba,
        s.device_state
    )
}

fn op_sct_write_same(dev: &Path, a: &SctWriteSameArgs) -> Result<Answer, Failure> {
    let f = if a.foreground {
        SctWriteSameFunction::PatternForeground
    } else {
        SctWriteSameFunction::PatternBackground
    };
    let d = open_sg(dev, &a.c, if a.foreground { LONG } else { SHORT }, true)?;
    let ws = SctWriteSame::new(f, Lba(a.r.lba), BlockCount(a.r.count)).pattern(a.pattern);
    let t0 = std::time::Instant::now();
    let regs = ata::sct_write_same(&d, &ws)?;
    let mut status = None;
    if f.is_background() && !a.no_wait {
        let deadline =
            std::time::Instant::now() + Duration::from_millis(u64::from(timeout(&a.c, LONG)));
        loop {
            let s = ata::sct_status(&d)?;
            if !s.in_progress() {
                if s.extended_status != 0 {
                    return Err(Failure {
                        line: format!(
                            "SCT Write Same ended with extended status 0x{:04x} at LBA {}",
                            s.extended_status, s.current_lba
                        ),
                        fields: json!({ "sct_status": s }),
                    });
                }
                status = Some(s);
                break;
            }
            if std::time::Instant::now() > deadline {
                return Err(Failure {
                    line: format!(
                        "SCT Write Same still running after the timeout (at LBA {}); poll with 'sct-status'",
                        s.current_lba
                    ),
                    fields: json!({ "sct_status": s }),
                });
            }
            std::thread::sleep(Duration::from_millis(500));
        }
    }
    let ms = t0.elapsed().as_millis() as u64;
    Ok(Answer {
        json: json!({
            "lba": a.r.lba, "count": a.r.count, "pattern": a.pattern, "function": f.code(),
            "registers": regs, "sct_status": status, "duration_ms": ms,
        }),
        text: format!(
            "SCT Write Same (function 0x{:04x}) of {} blocks at LBA {} with pattern 0x{:08x}: {} ({} ms)\n",
            f.code(),
            a.r.count,
            a.r.lba,
            a.pattern,
            if f.is_background() && a.no_wait { "started" } else { "done" },
            ms
        ),
    })
}

fn op_ata_sanitize(dev: &Path, a: &AtaSanitizeArgs) -> Result<Answer, Failure> {
    let op = match a.action {
        AtaSanAction::Overwrite => AtaSanitizeOp::Overwrite,
        AtaSanAction::Crypto => AtaSanitizeOp::CryptoScramble,
        AtaSanAction::Block => AtaSanitizeOp::BlockErase,
        AtaSanAction::Status => AtaSanitizeOp::Status,
    };
    let d = open_sg(dev, &a.c, LONG, op != AtaSanitizeOp::Status)?;
    let s = AtaSanitize::new(op).pattern(a.pattern).passes(a.passes);
    let regs = ata::sanitize(&d, &s)?;
    let status = regs.as_ref().map(AtaSanitizeStatus::from_registers);
    let text = match (&status, op) {
        (Some(st), AtaSanitizeOp::Status) => format!(
            "sanitize: completed without error {}, in progress {} ({:.1}%), frozen {}\n",
            yes_no(st.completed_ok),
            yes_no(st.in_progress),
            st.percent(),
            yes_no(st.frozen)
        ),
        _ => format!("{:?} started; follow it with '--action status'\n", a.action).to_lowercase(),
    };
    Ok(Answer {
        json: json!({ "action": format!("{:?}", a.action).to_lowercase(), "registers": regs, "status": status }),
        text,
    })
}

fn op_nvme_format(dev: &Path, a: &NvmeFormatArgs) -> Result<Answer, Failure> {
    let d = open_nvme(dev)?;
    let nsid = d.require_nsid()?;
    let lbaf = match a.lbaf {
        Some(l) => l,
        None => nvme::identify_namespace(&d, nsid)?.lbaf_in_use,
    };
    let c = NvmeCommand::format_nvm(nsid, lbaf, a.ses).timeout_ms(timeout(&a.c, LONG));
    let t0 = std::time::Instant::now();
    d.execute(&c, NvmeData::None)?;
    let ms = t0.elapsed().as_millis() as u64;
    Ok(Answer {
        json: json!({ "nsid": nsid, "lbaf": lbaf, "ses": a.ses, "duration_ms": ms }),
        text: format!(
            "Format NVM of namespace {nsid} (LBA format {lbaf}, SES {}): success ({ms} ms)\n",
            a.ses
        ),
    })
}

fn op_nvme_sanitize(dev: &Path, a: &NvmeSanitizeArgs) -> Result<Answer, Failure> {
    let d = open_nvme(dev)?;
    let act = match a.action {
        NvmeSanAction::Status => {
            let s = nvme::sanitize_status(&d)?;
            return Ok(Answer {
                text: format!(
                    "sanitize status: {} (progress {:.1}%), overwrite passes {}\n",
                    s.status_name,
                    f64::from(s.progress) * 100.0 / 65536.0,
                    s.overwrite_passes
                ),
                json: json!({ "sanitize_status": s }),
            });
        }
        NvmeSanAction::Block => NvmeSanAct::BlockErase,
        NvmeSanAction::Overwrite => NvmeSanAct::Overwrite,
        NvmeSanAction::Crypto => NvmeSanAct::CryptoErase,
        NvmeSanAction::ExitFailure => NvmeSanAct::ExitFailureMode,
    };
    let c = NvmeCommand::sanitize_with(act, false, 1, false, false, a.pattern)
        .timeout_ms(timeout(&a.c, LONG));
    d.execute(&c, NvmeData::None)?;
    Ok(Answer {
        json: json!({ "action": act }),
        text: "sanitize started; follow it with '--action status'\n".to_string(),
    })
}

/// SHA-256 (FIPS 180-4), for the digest of data read back.
mod sha256 {
    const K: [u32; 64] = [
        0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4,
        0xab1c5ed5, 0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe,
        0x9bdc06a7, 0xc19bf174, 0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f,
        0x4a7484aa, 0x5cb0a9dc, 0x76f988da, 0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7,
        0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967, 0x27b70a85, 0x2e1b2138, 0x4d2c6dfc,
        0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85, 0xa2bfe8a1, 0xa81a664b,
        0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070, 0x19a4c116,
        0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
        0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7,
        0xc67178f2,
    ];

    fn compress(h: &mut [u32; 8], block: &[u8]) {
        let mut w = [0u32; 64];
        for (i, c) in block.chunks_exact(4).enumerate() {
            w[i] = u32::from_be_bytes([c[0], c[1], c[2], c[3]]);
        }
        for i in 16..64 {
            let s0 = w[i - 15].rotate_right(7) ^ w[i - 15].rotate_right(18) ^ (w[i - 15] >> 3);
            let s1 = w[i - 2].rotate_right(17) ^ w[i - 2].rotate_right(19) ^ (w[i - 2] >> 10);
            w[i] = w[i - 16]
                .wrapping_add(s0)
                .wrapping_add(w[i - 7])
                .wrapping_add(s1);
        }
        let [mut a, mut b, mut c, mut d, mut e, mut f, mut g, mut hh] = *h;
        for i in 0..64 {
            let s1 = e.rotate_right(6) ^ e.rotate_right(11) ^ e.rotate_right(25);
            let ch = (e & f) ^ (!e & g);
            let t1 = hh
                .wrapping_add(s1)
                .wrapping_add(ch)
                .wrapping_add(K[i])
                .wrapping_add(w[i]);
            let s0 = a.rotate_right(2) ^ a.rotate_right(13) ^ a.rotate_right(22);
            let maj = (a & b) ^ (a & c) ^ (b & c);
            let t2 = s0.wrapping_add(maj);
            hh = g;
            g = f;
            f = e;
            e = d.wrapping_add(t1);
            d = c;
            c = b;
            b = a;
            a = t1.wrapping_add(t2);
        }
        for (x, y) in h.iter_mut().zip([a, b, c, d, e, f, g, hh]) {
            *x = x.wrapping_add(y);
        }
    }

    /// The digest of `data` as 64 lowercase hex digits.
    pub fn hex(data: &[u8]) -> String {
        let mut h: [u32; 8] = [
            0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab,
            0x5be0cd19,
        ];
        let full = data.len() / 64 * 64;
        for b in data[..full].chunks_exact(64) {
            compress(&mut h, b);
        }
        let mut tail = data[full..].to_vec();
        tail.push(0x80);
        while tail.len() % 64 != 56 {
            tail.push(0);
        }
        tail.extend_from_slice(&((data.len() as u64).wrapping_mul(8)).to_be_bytes());
        for b in tail.chunks_exact(64) {
            compress(&mut h, b);
        }
        h.iter().map(|x| format!("{x:08x}")).collect()
    }

    #[cfg(test)]
    mod tests {
        #[test]
        fn fips_180_examples() {
            // FIPS 180-4 / NIST CSRC example values.
            assert_eq!(
                super::hex(b""),
                "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
            );
            assert_eq!(
                super::hex(b"abc"),
                "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
            );
            assert_eq!(
                super::hex(b"abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
                "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_parse_decimal_and_hex() {
        assert_eq!(parse_u64("1234"), Ok(1234));
        assert_eq!(parse_u64("0x10"), Ok(16));
        assert_eq!(parse_u64("1_000"), Ok(1000));
        assert!(parse_u64("ten").is_err());
        assert_eq!(parse_u8("0xff"), Ok(255));
        assert!(parse_u8("0x100").is_err());
        assert_eq!(parse_u32("0xDEADBEEF"), Ok(0xDEAD_BEEF));
    }
}

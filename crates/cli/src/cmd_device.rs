//! `drivelab device DEV <op>`: send one passthrough command (SCSI, ATA over
//! SAT, NVMe) and show the device's own answer, decoded.
//!
//! This is the raw tool under `drivelab erase`, and what the QEMU tests drive
//! inside the guest: `probe` says which commands a device supports, the
//! read ops (`inquiry`, `read-capacity`, `identify`, `read`, `sct-status`)
//! show decoded answers, and the writing ops (`write-same`, `unmap`,
//! `sct-write-same`, `ata-sanitize`, `nvme-*`) send exactly one command (or
//! one per 65536 blocks for NVMe Write Zeroes); `format-unit` reformats a
//! SCSI drive to another block length (MODE SELECT, FORMAT UNIT, READ
//! CAPACITY). Writing ops need `--yes`
//! and pass the same safety check as every other writer (`--force` to
//! override). A device that refuses a command gives one line "… not
//! supported by this device (decoded sense/status)" and exit status 1; in
//! JSON the same document carries `error` plus the decoded fields.
//!
//! The work is in `drivelab_device::passthrough`, one function per op
//! (request checks, consent and the safety check included); this module
//! parses flags, calls it and prints the answer.

use std::fmt::Display;
use std::path::{Path, PathBuf};

use clap::{Args, Subcommand, ValueEnum};
use serde::Serialize;
use serde_json::{json, Value};

use drivelab_device::ata::AtaSanitizeOp;
use drivelab_device::nvme::SanitizeAction;
use drivelab_device::passthrough::{
    self as pt,
    write::{
        AtaSanitizeRequest, NvmeSanitizeRequest, PatternBlock, SctWriteSameRequest,
        WriteSameRequest,
    },
    BlockRange, OpError, WriteConsent,
};

use crate::error::usage;
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
    /// Write even if DEV has a partition table or a filesystem signature
    /// (a read-only or system device, or one whose bytes are in use, is
    /// still refused).
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
    /// SCSI FORMAT UNIT to another logical block length (520/528 -> 512):
    /// MODE SELECT's block descriptor, FORMAT UNIT, READ CAPACITY. Every
    /// block is lost.
    FormatUnit(FormatUnitArgs),
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

/// `format-unit`.
#[derive(Args, Debug)]
pub struct FormatUnitArgs {
    /// The new logical block length, bytes (512, 520, 524, 528, 4096, 4104,
    /// 4112 or 4160).
    #[arg(long = "block-size", value_parser = parse_u32)]
    pub block_size: u32,
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

impl Range {
    fn blocks(&self) -> BlockRange {
        BlockRange::new(self.lba, self.count)
    }
}

impl WriteGuard {
    fn consent(&self) -> WriteConsent {
        WriteConsent {
            yes: self.yes,
            force: self.force,
        }
    }
}

/// Run the subcommand: one library call per op, then print its answer.
pub fn run(a: DeviceArgs) -> anyhow::Result<u8> {
    let dev = a.device.as_path();
    crate::error::device_node(dev)?;
    let (name, common) = op_meta(&a.op);
    common.out.check_inputs(&[dev])?;
    let t = common.timeout_ms;
    let p = Printer {
        dev,
        op: name,
        out: &common.out,
    };
    match a.op {
        Op::Probe(_) => p.print(pt::probe(dev).map(|probe| ProbeAnswer {
            hidden_area: drivelab_device::health::hidden_area_note(dev),
            probe,
        })),
        Op::Inquiry(a) => p.print(pt::inquiry(dev, a.page, t)),
        Op::ReadCapacity(_) => p.print(pt::read_capacity(dev, t)),
        Op::Identify(_) => p.print(pt::identify(dev, t)),
        Op::Read(a) => {
            if let Some(d) = &a.dump {
                crate::output::check_file_inputs(d, "--dump", &[dev])?;
            }
            p.print(pt::read(dev, a.r.blocks(), a.dump.as_deref(), t))
        }
        Op::WriteSame(a) => {
            let req = WriteSameRequest {
                range: a.r.blocks(),
                block: match a.pattern_file {
                    Some(f) => PatternBlock::File(f),
                    None => PatternBlock::Byte(a.pattern_byte.unwrap_or(0)),
                },
                use16: a.cdb == CdbSize::Sixteen,
                unmap: a.unmap,
                ndob: a.ndob,
            };
            p.print(pt::write_same(dev, &req, &a.w.consent(), t))
        }
        Op::Unmap(a) => p.print(pt::unmap(dev, a.r.blocks(), &a.w.consent(), t)),
        Op::SctWriteSame(a) => {
            let req = SctWriteSameRequest {
                range: a.r.blocks(),
                pattern: a.pattern,
                foreground: a.foreground,
                no_wait: a.no_wait,
            };
            p.print(pt::sct_write_same(dev, &req, &a.w.consent(), t))
        }
        Op::SctStatus(_) => p.print(pt::sct_status(dev, t)),
        Op::AtaSanitize(a) => {
            let req = AtaSanitizeRequest {
                op: match a.action {
                    AtaSanAction::Overwrite => AtaSanitizeOp::Overwrite,
                    AtaSanAction::Crypto => AtaSanitizeOp::CryptoScramble,
                    AtaSanAction::Block => AtaSanitizeOp::BlockErase,
                    AtaSanAction::Status => AtaSanitizeOp::Status,
                },
                pattern: a.pattern,
                passes: a.passes,
            };
            p.print(pt::ata_sanitize(dev, &req, &a.w.consent(), t))
        }
        Op::FormatUnit(a) => p.print(pt::format_unit(dev, a.block_size, &a.w.consent(), t)),
        Op::NvmeWriteZeroes(a) => p.print(pt::nvme_write_zeroes(
            dev,
            a.r.blocks(),
            a.deac,
            &a.w.consent(),
            t,
        )),
        Op::NvmeDsm(a) => p.print(pt::nvme_dsm(dev, a.r.blocks(), &a.w.consent())),
        Op::NvmeFormat(a) => p.print(pt::nvme_format(dev, a.ses, a.lbaf, &a.w.consent(), t)),
        Op::NvmeSanitize(a) => {
            let action = match a.action {
                NvmeSanAction::Status => None,
                NvmeSanAction::Block => Some(SanitizeAction::BlockErase),
                NvmeSanAction::Overwrite => Some(SanitizeAction::Overwrite),
                NvmeSanAction::Crypto => Some(SanitizeAction::CryptoErase),
                NvmeSanAction::ExitFailure => Some(SanitizeAction::ExitFailureMode),
            };
            let req = match action {
                None => NvmeSanitizeRequest::Status,
                Some(action) => NvmeSanitizeRequest::Start {
                    action,
                    pattern: a.pattern,
                },
            };
            p.print(pt::nvme_sanitize(dev, req, &a.w.consent(), t))
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
        Op::FormatUnit(a) => ("format-unit", a.c.clone()),
        Op::NvmeWriteZeroes(a) => ("nvme-write-zeroes", a.c.clone()),
        Op::NvmeDsm(a) => ("nvme-dsm", a.c.clone()),
        Op::NvmeFormat(a) => ("nvme-format", a.c.clone()),
        Op::NvmeSanitize(a) => ("nvme-sanitize", a.c.clone()),
    }
}

/// `probe`'s answer with the hidden area, when the drive has one.
#[derive(Serialize)]
struct ProbeAnswer {
    #[serde(flatten)]
    probe: pt::inspect::Probe,
    /// "hidden area: N bytes (HPA/AMA)"; absent when there is none.
    #[serde(skip_serializing_if = "Option::is_none")]
    hidden_area: Option<String>,
}

impl Display for ProbeAnswer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.probe.fmt(f)?;
        match &self.hidden_area {
            Some(h) => writeln!(f, "{:<30}{h}", "hidden area"),
            None => Ok(()),
        }
    }
}

/// Prints an op's outcome: its text, or one JSON document naming the
/// device and the op. A device failure is exit status 1 (reported here,
/// with the decoded fields in JSON); a refused request is a usage error.
struct Printer<'a> {
    dev: &'a Path,
    op: &'static str,
    out: &'a OutputArgs,
}

impl Printer<'_> {
    fn print<T: Serialize + Display>(&self, r: Result<T, OpError>) -> anyhow::Result<u8> {
        let dev = self.dev.display().to_string();
        match r {
            Ok(answer) => {
                if self.out.json() {
                    let doc = self.document(json!({}), &answer)?;
                    self.out
                        .emit(&format!("{}\n", serde_json::to_string_pretty(&doc)?))?;
                } else {
                    self.out.emit(&answer.to_string())?;
                }
                Ok(0)
            }
            Err(OpError::Failed(f)) => {
                // Name the device once: most device errors already start with it.
                let line = if f.line.contains(&dev) {
                    f.line.clone()
                } else {
                    format!("{dev}: {}", f.line)
                };
                if self.out.json() {
                    let doc = self.document(json!({ "error": line, "exit_status": 1 }), &f)?;
                    self.out
                        .emit(&format!("{}\n", serde_json::to_string_pretty(&doc)?))?;
                } else {
                    eprintln!("drivelab: error: {}", line.replace('\n', " "));
                }
                Ok(1)
            }
            Err(e) if e.is_input() => Err(usage(e.to_string())),
            Err(e) => Err(anyhow::Error::new(e)),
        }
    }

    /// `{device, op}` plus `head` plus the fields of `body`.
    fn document(&self, head: Value, body: &impl Serialize) -> anyhow::Result<Value> {
        let mut doc = json!({ "device": self.dev.display().to_string(), "op": self.op });
        for extra in [head, serde_json::to_value(body)?] {
            if let (Some(d), Value::Object(e)) = (doc.as_object_mut(), extra) {
                d.extend(e);
            }
        }
        Ok(doc)
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
